"""Remote storage URLs as a stack names them (trainer.checkpointDir, trainer.data, tensorboard.logDir):
their parts, and what makes one name no place at all."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from .roles import is_remote

# Object stores: the first part of the URL is a bucket, which they cannot do without.
BUCKET_SCHEMES = ("gs", "s3")
# What TensorBoard reads besides a folder in its pod: tf.io.gfile's file systems and those of its own
# stub (gs:// and hdfs:// in TensorFlow, s3:// through boto3 or tensorflow-io).
TENSORBOARD_SCHEMES = ("gs", "s3", "hdfs")
# Addresses no file system of tf.io.gfile (nor TensorBoard) reads: a page, not a file.
WEB_SCHEMES = ("http", "https")
# HDFS' NameNode port when a URL names none.
HDFS_DEFAULT_PORT = 8020
# Object stores answer on HTTPS.
HTTPS_PORT = 443
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class RemoteUrl:
    scheme: str  # as written: 'gs'
    authority: str  # the bucket or host[:port], '' when none
    path: str

    @property
    def host(self) -> str:
        return self.authority.rsplit(":", 1)[0] if ":" in self.authority else self.authority

    @property
    def port(self) -> Optional[int]:
        """The port the URL names, or the scheme's own (None where tfk8s does not know it)."""
        if ":" in self.authority:
            port = self.authority.rsplit(":", 1)[1]
            return int(port) if port.isascii() and port.isdigit() else None
        if self.scheme in BUCKET_SCHEMES:
            return HTTPS_PORT
        if self.scheme == "hdfs":
            return HDFS_DEFAULT_PORT
        return None


def remote_url(text: str) -> Optional[RemoteUrl]:
    """The parts of a remote URL; None for a path in a pod."""
    if not is_remote(text):
        return None
    scheme, rest = text.split("://", 1)
    authority, _, path = rest.partition("/")
    return RemoteUrl(scheme, authority, path)


def storage_url_problem(text: str) -> Optional[str]:
    """Why `text` names no place to read or write: a control character (a newline pasted in), or an
    object store's URL without a bucket. None when it could be one."""
    control = _CONTROL.search(text)
    if control:
        return f"has a control character ({control.group()!r}), which no file or bucket name holds"
    url = remote_url(text)
    if url is None:
        return None
    if text != text.strip():
        return "starts or ends with a space"
    if url.scheme in BUCKET_SCHEMES and not url.authority:
        return f"names no bucket ({url.scheme}://<bucket>/<folder>)"
    return None


def web_address_problem(text: str) -> Optional[str]:
    """Why the trainer could not read or write at `text`: a web address, which no file system of
    tf.io.gfile serves. None otherwise."""
    url = remote_url(text)
    if url is not None and url.scheme.lower() in WEB_SCHEMES:
        return "is a web address, which tf.io.gfile cannot read or write; give gs://, s3://, hdfs:// or a path"
    return None
