"""Files of a program's `source` that look like credentials, which tfk8s refuses to ship.

The folder is shipped in a ConfigMap that anyone who can read the namespace
can read, so a key or a password file in it would be handed to all of them.
The list is short on purpose: names and contents that are credentials
whatever the project, so a refusal is almost never wrong. Dotfiles (`.netrc`,
`.npmrc`, `.pypirc`, `.pgpass`, `.htpasswd`, `.env`) need no entry: they are
never shipped at all. A file left out by `.gitignore` or `.tfk8signore` is not
checked: it is not shipped either.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Optional

PRIVATE_KEY = "a private key"
PASSWORDS = "a password or token file"
# Names (fnmatch, case-insensitive) and what they are.
CREDENTIAL_NAMES: dict[str, str] = {
    "id_rsa": PRIVATE_KEY,  # ssh-keygen's default names
    "id_dsa": PRIVATE_KEY,
    "id_ecdsa": PRIVATE_KEY,
    "id_ecdsa_sk": PRIVATE_KEY,
    "id_ed25519": PRIVATE_KEY,
    "id_ed25519_sk": PRIVATE_KEY,
    "*.pem": "a key or certificate (PEM)",
    "*.key": PRIVATE_KEY,
    "*.p12": "a key store (PKCS #12)",
    "*.pfx": "a key store (PKCS #12)",
    "*.jks": "a key store (Java)",
    "*.kdbx": "a password database (KeePass)",
    "_netrc": PASSWORDS,  # .netrc's name on Windows
    "credentials": "a credentials file (AWS, ...)",
    "credentials.json": "a credentials file (Google, ...)",
}
# Contents, whatever the file's name.
PRIVATE_KEY_BLOCK = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----")
SERVICE_ACCOUNT = re.compile(rb'"type"\s*:\s*"service_account"')


def credential_by_name(name: str) -> Optional[str]:
    """What the file's name says it is, when that is a credential."""
    lowered = name.lower()
    for pattern, kind in CREDENTIAL_NAMES.items():
        if fnmatchcase(lowered, pattern):
            return kind
    return None


def credential_by_content(content: bytes) -> Optional[str]:
    """What the file's content says it is, when that is a credential."""
    if SERVICE_ACCOUNT.search(content) and b'"private_key"' in content:
        return "a service account key"
    if PRIVATE_KEY_BLOCK.search(content):
        return "a private key"
    return None
