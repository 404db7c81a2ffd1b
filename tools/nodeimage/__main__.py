"""`python -m tools.nodeimage`: build the real nodes' images into the cache (make node-image)."""

import subprocess
import sys

from .build import ensure_images

if __name__ == "__main__":
    try:
        ensure_images()
    except (subprocess.CalledProcessError, RuntimeError, ValueError) as error:
        print(f"node-image: {error}", file=sys.stderr)
        sys.exit(1)
