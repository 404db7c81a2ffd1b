"""The kernel's netfilter state that the NetworkPolicy agents make and must leave behind: nftables
tables (listed and removed over netlink, nfnetlink's nf_tables subsystem) and bound nfqueues
(/proc/net/netfilter/nfnetlink_queue); and the elements of a set, where an agent keeps the
addresses of the pods it polices.

Over netlink rather than the `nft` command: no `nft` is installed on these machines, and teardown
must remove a table that an agent killed outright (SIGKILL, with a killed test run) could not
remove itself; a table left behind keeps sending its pods' new connections to a queue nobody reads,
which drops them. Root only (CAP_NET_ADMIN).
"""

from __future__ import annotations

import errno
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

NFQUEUE_PROC = Path("/proc/net/netfilter/nfnetlink_queue")

# linux/netlink.h, linux/netfilter/nfnetlink.h, linux/netfilter/nf_tables.h, linux/netfilter.h.
_NETLINK_NETFILTER = 12
_NLM_F_REQUEST, _NLM_F_ACK, _NLM_F_CREATE, _NLM_F_DUMP = 0x1, 0x4, 0x400, 0x300
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_NFNL_MSG_BATCH_BEGIN, _NFNL_MSG_BATCH_END = 16, 17
_NFNL_SUBSYS_NFTABLES = 10
_NFT_MSG_NEWTABLE, _NFT_MSG_GETTABLE, _NFT_MSG_DELTABLE = 0, 1, 2
_NFT_MSG_NEWSETELEM, _NFT_MSG_GETSETELEM = 12, 13
_NFTA_TABLE_NAME = 1
_NFTA_SET_ELEM_LIST_TABLE, _NFTA_SET_ELEM_LIST_SET, _NFTA_SET_ELEM_LIST_ELEMENTS = 1, 2, 3
_NFTA_LIST_ELEM = 1
_NFTA_SET_ELEM_KEY = 1
_NFTA_DATA_VALUE = 1
_HEADER = struct.Struct("=IHHII")  # struct nlmsghdr: length, type, flags, sequence, port id
_GENMSG = struct.Struct("=BBH")  # struct nfgenmsg: family, version, resource id (big-endian)
_ATTR = struct.Struct("=HH")  # struct nlattr: length, type

FAMILY_INET = 1  # NFPROTO_INET: a table for IPv4 and IPv6, as the agents make
FAMILIES = {1: "inet", 2: "ip", 3: "arp", 5: "netdev", 7: "bridge", 10: "ip6"}


class NetfilterError(OSError):
    pass


@dataclass(frozen=True, order=True)
class Table:
    family: int
    name: str

    def __str__(self) -> str:
        return f"{FAMILIES.get(self.family, self.family)} {self.name}"


def tables() -> list[Table]:
    """Every nftables table of this network namespace (iptables-nft's too), sorted."""
    found = []
    for body in _dump(_NFT_MSG_GETTABLE, _NFT_MSG_NEWTABLE, _GENMSG.pack(0, 0, 0), "listing nftables tables"):
        family = _GENMSG.unpack_from(body)[0]
        name = _attributes(body[_GENMSG.size :]).get(_NFTA_TABLE_NAME, b"").rstrip(b"\0")
        found.append(Table(family, name.decode()))
    return sorted(found)


def set_elements(table: Table, set_name: str) -> list[bytes]:
    """The keys of a set's elements (an IPv4 address set's: 4 bytes each, network order)."""
    request = (
        _GENMSG.pack(table.family, 0, 0)
        + _attribute(_NFTA_SET_ELEM_LIST_TABLE, table.name.encode() + b"\0")
        + _attribute(_NFTA_SET_ELEM_LIST_SET, set_name.encode() + b"\0")
    )
    keys = []
    for body in _dump(_NFT_MSG_GETSETELEM, _NFT_MSG_NEWSETELEM, request, f"set {set_name} of {table}"):
        elements = _attributes(body[_GENMSG.size :]).get(_NFTA_SET_ELEM_LIST_ELEMENTS, b"")
        for kind, element in _attribute_list(elements):
            if kind == _NFTA_LIST_ELEM:
                key = _attributes(element).get(_NFTA_SET_ELEM_KEY, b"")
                keys.append(_attributes(key).get(_NFTA_DATA_VALUE, b""))
    return keys


def delete_table(table: Table) -> bool:
    """Delete `table` with everything in it; False when there was no such table."""
    try:
        _transact(_NFT_MSG_DELTABLE, table, 0)
    except NetfilterError as error:
        if error.errno == errno.ENOENT:
            return False
        raise
    return True


def create_table(table: Table) -> None:
    """An empty table (the tests make one to remove)."""
    _transact(_NFT_MSG_NEWTABLE, table, _NLM_F_CREATE)


def bound_queues() -> set[int]:
    """The nfqueue numbers a program listens on now (the kernel unbinds a queue when its socket closes)."""
    try:
        lines = NFQUEUE_PROC.read_text().splitlines()
    except FileNotFoundError:  # no program ever bound one since nfnetlink_queue loaded
        return set()
    return {int(line.split()[0]) for line in lines if line.strip()}


def _dump(command: int, reply: int, request: bytes, what: str) -> list[bytes]:
    """The bodies of the kernel's `reply` messages to a dump request."""
    with _socket() as sock:
        sock.send(_message(_nft(command), _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0, request))
        found: list[bytes] = []
        while True:
            for kind, _, body in _messages(sock.recv(1 << 16)):
                if kind == _NLMSG_DONE:
                    return found
                if kind == _NLMSG_ERROR:
                    _raise_for(body, what)
                elif kind == _nft(reply):
                    found.append(body)


def _transact(command: int, table: Table, flags: int) -> None:
    """One nf_tables change in its own batch (the subsystem takes changes only in batches); raise
    the kernel's refusal."""
    name = table.name.encode() + b"\0"
    batch_genmsg = _GENMSG.pack(0, 0, socket.htons(_NFNL_SUBSYS_NFTABLES))
    change = _GENMSG.pack(table.family, 0, 0) + _attribute(_NFTA_TABLE_NAME, name)
    with _socket() as sock:
        sock.send(
            _message(_NFNL_MSG_BATCH_BEGIN, _NLM_F_REQUEST, 1, 0, batch_genmsg)
            + _message(_nft(command), _NLM_F_REQUEST | _NLM_F_ACK | flags, 2, 0, change)
            + _message(_NFNL_MSG_BATCH_END, _NLM_F_REQUEST, 3, 0, batch_genmsg)
        )
        while True:
            for kind, sequence, body in _messages(sock.recv(1 << 16)):
                if kind == _NLMSG_ERROR and sequence == 2:
                    _raise_for(body, f"nftables table {table}")
                    return


def _socket() -> socket.socket:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_NETFILTER)
    sock.settimeout(5.0)
    sock.bind((0, 0))
    return sock


def _nft(command: int) -> int:
    return (_NFNL_SUBSYS_NFTABLES << 8) | command


def _message(kind: int, flags: int, sequence: int, family: int, payload: bytes = b"") -> bytes:
    body = payload or _GENMSG.pack(family, 0, 0)
    return _HEADER.pack(_HEADER.size + len(body), kind, flags, sequence, 0) + body


def _attribute(kind: int, data: bytes) -> bytes:
    length = _ATTR.size + len(data)
    return _ATTR.pack(length, kind) + data + b"\0" * (-length % 4)


def _attributes(data: bytes) -> dict[int, bytes]:
    return dict(_attribute_list(data))


def _attribute_list(data: bytes) -> list[tuple[int, bytes]]:
    """(type, payload) of each attribute, in order (a list's elements share a type)."""
    found = []
    offset = 0
    while offset + _ATTR.size <= len(data):
        length, kind = _ATTR.unpack_from(data, offset)
        if length < _ATTR.size:
            break
        found.append((kind & 0x3FFF, data[offset + _ATTR.size : offset + length]))  # without the nested/byte-order bits
        offset += length + (-length % 4)
    return found


def _messages(data: bytes) -> list[tuple[int, int, bytes]]:
    """(type, sequence, body) of each message in one datagram."""
    found = []
    offset = 0
    while offset + _HEADER.size <= len(data):
        length, kind, _, sequence, _ = _HEADER.unpack_from(data, offset)
        if length < _HEADER.size:
            break
        found.append((kind, sequence, data[offset + _HEADER.size : offset + length]))
        offset += length + (-length % 4)
    return found


def _raise_for(error_body: bytes, what: str) -> None:
    """An NLMSG_ERROR: error 0 is the acknowledgement; anything else, the kernel's refusal."""
    code = -struct.unpack_from("=i", error_body)[0]
    if code:
        raise NetfilterError(code, f"{what}: {os.strerror(code)}")
