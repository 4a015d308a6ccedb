import sys

from benchstack_repack.cli import main

sys.exit(main())
