"""python -m playground"""

import sys

from playground.app import main

sys.exit(main())
