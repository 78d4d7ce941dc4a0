import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# patches/ is a top-level folder of fault-injection modules named in pipelines
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
