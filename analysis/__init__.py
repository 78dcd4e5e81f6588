"""PySpark analysis of run histories (a later issue). Reads histories only."""
