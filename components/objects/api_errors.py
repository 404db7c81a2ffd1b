"""What the API server said when it refused a request, in one line: its own message, and for a 403 the
permission that is missing (the verb, the resource, the namespace), not the HTTP headers and body.

The API server answers an error with a Status object (`kind: Status`) whose
`message` is written for people: `pods is forbidden: User "u" cannot list
resource "pods" in API group "" in the namespace "tf-x"`. The client's
exception text is that body with every response header before it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

# The authorizer's words, as the API server writes them for every 403 (k8s.io/apiserver's forbidden message).
_FORBIDDEN = re.compile(
    r'cannot (?P<verb>[\w*]+) resource "(?P<resource>[^"]+)" in API group "(?P<group>[^"]*)"'
    r'(?: in the namespace "(?P<namespace>[^"]+)"| at the cluster scope)?'
)
_USER = re.compile(r'User "(?P<user>[^"]+)"')


def status_of(body: Any) -> dict[str, Any]:
    """The Status object of an error response's body; {} when the body is not one."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str) or not body.strip():
        return {}
    try:
        status = json.loads(body)
    except ValueError:
        return {}
    return status if isinstance(status, dict) else {}


def missing_permission(message: str) -> Optional[str]:
    """`list pods in namespace tf-x` from a 403's message; None where the message does not say."""
    found = _FORBIDDEN.search(message)
    if found is None:
        return None
    resource = found["resource"] if not found["group"] else f"{found['resource']}.{found['group']}"
    where = f"in namespace {found['namespace']}" if found["namespace"] else "cluster-wide"
    user = _USER.search(message)
    for_user = f" for {user['user']}" if user else ""
    return f"`{found['verb']}` on `{resource}` {where}{for_user}"


def api_error_text(status_code: Optional[int], reason: Optional[str], body: Any) -> str:
    """One line for an API error: the code, the server's message, and for a 403 the permission to ask for."""
    status = status_of(body)
    message = str(status.get("message") or "").strip()
    if not message:
        lines = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
        message = (lines.strip().splitlines() or [""])[0][:300]
    head = f"{status_code} {reason or status.get('reason') or ''}".strip()
    text = f"{head}: {message}" if message else head
    if status_code == 403:
        permission = missing_permission(message)
        if permission:
            text += f"; missing permission: {permission} (ask for a Role or ClusterRole that grants it)"
    return text
