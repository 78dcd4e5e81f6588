import sys

from workloads.zk_eager import main

sys.exit(main(sys.argv))
