"""Keys and certificates of the local control plane, and its admin credentials.

One self-signed serving certificate for 127.0.0.1, the service-account signing
key pair, and a random bearer token for the admin (a static token file is the
simplest authentication the API server offers; the cluster lives on loopback
for the length of a test run).

The aggregation layer has a CA of its own (the front proxy's): the API server
proxies a request for an aggregated API (metrics.k8s.io) with a client
certificate from it, and the API's server believes the user named in the
request's headers only from a certificate of that CA. A certificate of the
cluster's CA (every kubelet's, CoreDNS's) can then not pass for the proxy.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ADMIN_USER = "tfk8s-admin"
ADMIN_GROUP = "system:masters"
TOKEN_FILE = "tokens.csv"


@dataclass(frozen=True)
class Pki:
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_public_key: Path
    token_file: Path
    admin_token: str


def _write_private_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def create_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    serving_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tfk8s-local-apiserver")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(serving_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(serving_key, hashes.SHA256())
    )
    pki = _layout(directory, admin_token=secrets.token_hex(24))
    pki.serving_cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    _write_private_key(serving_key, pki.serving_key)
    account_key = ec.generate_private_key(ec.SECP256R1())
    _write_private_key(account_key, pki.service_account_key)
    pki.service_account_public_key.write_bytes(
        account_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    # token,user,uid,"group"
    pki.token_file.write_text(f'{pki.admin_token},{ADMIN_USER},{ADMIN_USER},"{ADMIN_GROUP}"\n')
    pki.token_file.chmod(0o600)
    return pki


@dataclass(frozen=True)
class FrontProxy:
    """The aggregation layer's CA and the API server's client certificate from it."""

    ca_cert: Path
    ca_key: Path
    client_cert: Path
    client_key: Path


FRONT_PROXY_CLIENT = "front-proxy-client"


def create_front_proxy(directory: Path) -> FrontProxy:
    front = FrontProxy(
        directory / "front-proxy-ca.crt",
        directory / "front-proxy-ca.key",
        directory / "front-proxy-client.crt",
        directory / "front-proxy-client.key",
    )
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tfk8s-local-front-proxy-ca")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    front.ca_cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    _write_private_key(key, front.ca_key)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, FRONT_PROXY_CLIENT)])
    usage = x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH])
    _issue(front.ca_cert, front.ca_key, subject, [usage], front.client_cert, front.client_key)
    return front


def issue_client_certificate(pki: Pki, common_name: str, organization: str, cert: Path, key: Path) -> None:
    """A client certificate signed by the cluster's CA (the serving certificate, which is a CA):
    a kubelet's identity towards the API server (`system:node:<name>` in `system:nodes`),
    or the API server's towards kubelets."""
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    usage = x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH])
    _issue(pki.serving_cert, pki.serving_key, subject, [usage], cert, key)


def issue_serving_certificate(
    pki: Pki,
    common_name: str,
    cert: Path,
    key: Path,
    addresses: tuple[str, ...] = ("127.0.0.1",),
    dns_names: tuple[str, ...] = (),
) -> None:
    """A serving certificate for `addresses` and `dns_names` signed by the cluster's CA: the host's
    webhook servers and metrics-server (for 127.0.0.1, which the API server calls with that CA as
    the caBundle), a real node's kubelet (for its address on the pod bridge, which metrics-server
    checks against that CA)."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    names = x509.SubjectAlternativeName(
        [
            *(x509.IPAddress(ipaddress.ip_address(address)) for address in addresses),
            *(x509.DNSName(name) for name in dns_names),
        ]
    )
    usage = x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH])
    _issue(pki.serving_cert, pki.serving_key, subject, [names, usage], cert, key)


def _issue(
    ca_cert_file: Path,
    ca_key_file: Path,
    subject: x509.Name,
    extensions: list[x509.ExtensionType],
    cert: Path,
    key: Path,
) -> None:
    # Every CA key is one that _write_private_key wrote: an EC key.
    ca_key = cast(
        ec.EllipticCurvePrivateKey, serialization.load_pem_private_key(ca_key_file.read_bytes(), password=None)
    )
    ca_cert = x509.load_pem_x509_certificate(ca_cert_file.read_bytes())
    issued_key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(issued_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
    )
    for extension in extensions:
        builder = builder.add_extension(extension, critical=False)
    certificate = builder.sign(ca_key, hashes.SHA256())
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    _write_private_key(issued_key, key)


def load_pki(directory: Path) -> Pki:
    """The PKI a running cluster created in `directory`."""
    return _layout(directory, admin_token=(directory / TOKEN_FILE).read_text().split(",", 1)[0])


def _layout(directory: Path, admin_token: str) -> Pki:
    return Pki(
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        service_account_key=directory / "service-account.key",
        service_account_public_key=directory / "service-account.pub",
        token_file=directory / TOKEN_FILE,
        admin_token=admin_token,
    )
