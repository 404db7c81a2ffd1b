"""`python -m tools.nodeimage`: build the real nodes' images into the cache (make node-image),
and remove the archives of their earlier builds.

The pruning lives here, not in build.py, whose source is part of the TensorFlow image's key.
"""

import subprocess
import sys

from .build import ensure_images
from .images import earlier_archives

if __name__ == "__main__":
    try:
        for image in ensure_images():
            for earlier in earlier_archives(image):
                earlier.unlink()
                print(f"[node-image] removed the earlier build {earlier}", flush=True)
    except (subprocess.CalledProcessError, RuntimeError, ValueError) as error:
        print(f"node-image: {error}", file=sys.stderr)
        sys.exit(1)
