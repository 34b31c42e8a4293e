import sys

from irglow.cli import main

sys.exit(main())
