"""Settings for the whole suite."""
import os

# pytest-xdist runs test files side by side (``--dist loadfile``): each worker's harnesses
# take ports from their own slice (harness.cluster.local.free_port), so two clusters
# starting at once never pick the same port. Set at import: every run a worker starts inherits it.
_worker, _count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
if _worker and _count:
    os.environ["REBALANCE_LAB_PORT_SLICE"] = f"{int(_worker.removeprefix('gw'))}/{_count}"
