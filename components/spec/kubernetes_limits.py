"""Kubernetes' and Linux's own limits on what a stack's values become, checked before anything reaches
the API server: each predicate returns why a value breaks the rule, in words, or None.

The rules are Kubernetes' own, as its validation states them:
- names, label keys and values, ConfigMap and Secret keys: k8s.io/apimachinery
  pkg/util/validation/validation.go (IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName,
  IsValidLabelValue, IsConfigMapKey);
- a label key and a toleration's key are qualified names, a toleration's value (operator Equal) a
  label value: k8s.io/kubernetes pkg/apis/core/validation/validation.go (validateTolerations);
- a ConfigMap's or a Secret's data is at most MaxSecretSize (1 MiB): k8s.io/api core/v1/types.go,
  applied by ValidateConfigMap and ValidateSecret;
- an object is at most what etcd stores in one request: its --max-request-bytes, 1.5 MiB unless a
  cluster raises it ("etcdserver: request is too large");
- a Secret's data values are at most MaxSecretSize together (ValidateSecret): the Secret of a
  program's secret `env` values (limit_checks.program_secret_problems);
- an object's annotations are at most 256 KiB together, their keys and values (k8s.io/apimachinery
  pkg/api/validation/objectmeta.go, ValidateAnnotationsSize, TotalAnnotationSizeLimitB): tfk8s writes
  only its hashes and fixed values there, no stack value; annotations_size_problem is the rule, and
  tests/spec/test_object_limits.py holds every object of a stack to it;
- a container's mountPath is not empty and is unique in its container (ValidateVolumeMounts): two
  mounts at one path are refused.
An image reference is what the kubelet can pull: the grammar of the distribution project's reference
package (reference/regexp.go, which the container runtimes parse with; 'InvalidImageName' otherwise),
a repository name of at most 255 characters, and, for the API server, no space at either end.
What a container runs is Linux's to limit: execve(2) refuses (E2BIG) one argument or environment
string past MAX_ARG_STRLEN (32 pages: 131,072 bytes with its NUL) and all of them together past
ARG_MAX (a quarter of the stack limit: 2 MiB under the usual 8 MiB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional

# Names. The patterns are the models' too (pydantic's `pattern`, with the lengths as `max_length`).
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_PATTERN = rf"^{_DNS1123_LABEL}$"
DNS1123_SUBDOMAIN_PATTERN = rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$"
# Python's `$` also matches before a final line break, so its checks take the whole value
# (fullmatch): 'ml\n' is no label value. The models' patterns run in pydantic's engine, where `$`
# is the end of the text.
DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_PATTERN)
DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_PATTERN)
# Label keys (qualified names) and values.
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_RE = re.compile(rf"^{_QUALIFIED_NAME}$")
LABEL_VALUE_PATTERN = rf"^({_QUALIFIED_NAME})?$"
LABEL_VALUE_RE = re.compile(LABEL_VALUE_PATTERN)
# ConfigMap and Secret keys: the characters (a pattern), and what config_map_key_problem adds.
CONFIG_MAP_KEY_MAX = 253
CONFIG_MAP_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"
CONFIG_MAP_KEY_RE = re.compile(CONFIG_MAP_KEY_PATTERN)
# Sizes.
MAX_CONFIG_MAP_BYTES = 1024 * 1024  # MaxSecretSize, a ConfigMap's and a Secret's data alike
MAX_OBJECT_BYTES = 1_572_864  # etcd's default --max-request-bytes
MAX_ANNOTATIONS_BYTES = 256 * 1024  # TotalAnnotationSizeLimitB: one object's annotations, keys and values
MAX_ARG_STRLEN = 131_072  # one argument or NAME=value string, its NUL included
ARG_MAX = 2 * 1024 * 1024  # every argument and environment string of one exec, NULs included

# Image references (distribution/reference regexp.go).
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_IMAGE_NAME = rf"(?:{_HOST}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE_REFERENCE_RE = re.compile(rf"^(?P<name>{_IMAGE_NAME})(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$", re.ASCII)
IMAGE_NAME_MAX = 255

LABEL_VALUE_RULE = "at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
LABEL_KEY_RULE = (
    "a name of at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit, "
    "after an optional DNS subdomain prefix and '/' (e.g. 'example.com/gpu-kind')"
)
DNS1123_SUBDOMAIN_RULE = (
    "at most 253 characters: lower-case letters, digits and '-' in parts joined by '.', each part starting and "
    "ending with a letter or digit"
)
CONFIG_MAP_KEY_RULE = "at most 253 letters, digits, '-', '_' and '.', and not '.', '..' or starting with '..'"


@dataclass(frozen=True)
class ImageReference:
    """An image reference taken apart as the kubelet's runtime reads it: `[registry[:port]/]name[:tag][@digest]`."""

    name: str
    tag: Optional[str]
    digest: Optional[str]


def image_reference(image: str) -> Optional[ImageReference]:
    """The one parser of image references (regexp.go's grammar); None for text that is none."""
    match = IMAGE_REFERENCE_RE.fullmatch(image)
    if match is None:
        return None
    return ImageReference(match.group("name"), match.group("tag"), match.group("digest"))


def dns1123_label_problem(name: str) -> Optional[str]:
    if len(name) > DNS1123_LABEL_MAX:
        return f"is {len(name)} characters; a DNS-1123 label has at most {DNS1123_LABEL_MAX}"
    if not DNS1123_LABEL_RE.fullmatch(name):
        return "is not a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"
    return None


def dns1123_subdomain_problem(name: str) -> Optional[str]:
    if len(name) > DNS1123_SUBDOMAIN_MAX:
        return f"is {len(name)} characters; a DNS-1123 subdomain has at most {DNS1123_SUBDOMAIN_MAX}"
    if not DNS1123_SUBDOMAIN_RE.fullmatch(name):
        return f"is not a DNS-1123 subdomain: {DNS1123_SUBDOMAIN_RULE}"
    return None


def label_value_problem(value: str) -> Optional[str]:
    if len(value) > LABEL_VALUE_MAX:
        return f"is {len(value)} characters; a label value has at most {LABEL_VALUE_MAX}"
    if not LABEL_VALUE_RE.fullmatch(value):
        return f"is not a label value: {LABEL_VALUE_RULE} (or empty)"
    return None


def label_key_problem(key: str) -> Optional[str]:
    """IsQualifiedName: `[prefix/]name`, the prefix a DNS-1123 subdomain, the name at most 63."""
    parts = key.split("/")
    if len(parts) > 2:
        return f"has more than one '/'; a label key is {LABEL_KEY_RULE}"
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return f"has an empty prefix before '/'; a label key is {LABEL_KEY_RULE}"
        problem = dns1123_subdomain_problem(prefix)
        if problem:
            return f"has a prefix '{prefix}' that {problem}"
    if not name:
        return f"has an empty name; a label key is {LABEL_KEY_RULE}"
    if len(name) > QUALIFIED_NAME_MAX:
        return f"has a name of {len(name)} characters (after any prefix); at most {QUALIFIED_NAME_MAX}"
    if not QUALIFIED_NAME_RE.fullmatch(name):
        return f"is not a label key: {LABEL_KEY_RULE}"
    return None


def config_map_key_problem(key: str) -> Optional[str]:
    """IsConfigMapKey: a ConfigMap's or a Secret's key."""
    if len(key) > CONFIG_MAP_KEY_MAX:
        return f"is {len(key)} characters; a ConfigMap or Secret key has at most {CONFIG_MAP_KEY_MAX}"
    if not CONFIG_MAP_KEY_RE.fullmatch(key) or key in (".", "..") or key.startswith(".."):
        return f"is not a ConfigMap or Secret key: {CONFIG_MAP_KEY_RULE}"
    return None


def image_reference_problem(image: str) -> Optional[str]:
    if image != image.strip():
        return "has a space or a line break at either end, which the API server refuses in an image"
    reference = image_reference(image)
    if reference is None:
        return (
            "is no image reference the kubelet can pull ('InvalidImageName'): [registry[:port]/]name[:tag][@digest], "
            "the name in lower-case letters, digits and '.', '_', '-' between them, parts joined by '/', a tag of at "
            "most 128 letters, digits, '_', '.' and '-'"
        )
    if len(reference.name) > IMAGE_NAME_MAX:
        return f"has a repository name of {len(reference.name)} characters; at most {IMAGE_NAME_MAX}"
    return None


def annotations_size_problem(annotations: Mapping[str, str]) -> Optional[str]:
    """ValidateAnnotationsSize: the bytes of every key and value of one object's annotations together."""
    size = sum(_bytes(key) + _bytes(value) for key, value in annotations.items())
    if size > MAX_ANNOTATIONS_BYTES:
        return f"come to {size:,} bytes, and an object's annotations hold at most {MAX_ANNOTATIONS_BYTES:,} together"
    return None


def secret_data_problem(data: Mapping[str, str]) -> Optional[str]:
    """ValidateSecret: the bytes of a Secret's values together (its keys do not count)."""
    size = sum(_bytes(value) for value in data.values())
    if size > MAX_CONFIG_MAP_BYTES:
        return f"come to {size:,} bytes, and a Secret holds at most {MAX_CONFIG_MAP_BYTES:,} (MaxSecretSize)"
    return None


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def exec_string_bytes(text: str) -> int:
    """What one argument or NAME=value string takes of exec's limits: its UTF-8 bytes and a NUL."""
    return len(text.encode("utf-8", "surrogatepass")) + 1


def exec_string_problem(text: str) -> Optional[str]:
    size = exec_string_bytes(text)
    if size > MAX_ARG_STRLEN:
        return (
            f"is {size:,} bytes, and Linux passes at most {MAX_ARG_STRLEN:,} in one argument or environment "
            "variable (exec fails with 'Argument list too long')"
        )
    return None
