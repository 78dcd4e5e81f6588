"""Fault kinds, one module each (``catalogue.py`` lists them), their schedule and the
random schedule drawn from them.

Below the harness: a fault acts through the ``Targets`` interface (``base.py``) that the
harness implements, and imports only ``runtime`` and ``oracle``, never ``harness`` or
``workloads``.
"""
