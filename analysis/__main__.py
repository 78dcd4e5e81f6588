"""python3 -m analysis RUNS… [--out DIR] [--master URL]: the `analyze` command on its own."""

from .cli import analyze

if __name__ == "__main__":
    analyze(prog_name="python3 -m analysis")
