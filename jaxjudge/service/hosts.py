"""Host names and IP literals in one normal form: the webhook policy and the settings that
configure it (its allow-list) both read hosts this way, so neither imports the other."""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def idna(name: str) -> str:
    """Lower-case ASCII (punycode) form of a host name, or ValueError."""
    name = name.strip().lower()
    if name.endswith("."):
        name = name[:-1]  # the absolute form of the same name
    if not name.isascii():
        try:
            name = name.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise ValueError(f"{name!r} is not a valid international domain name") from exc
    labels = name.split(".")
    if len(name) > 253 or not all(
        0 < len(label) <= 63 and set(label) <= _HOST_CHARS for label in labels
    ):
        raise ValueError(f"{name!r} is not a valid host name")
    return name


def ip_or_none(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def host_pattern(entry: str) -> str:
    """One allow-list entry, normalized: `*`, `*.<name>`, a host name or an IP literal
    (IPv6 with or without brackets). ValueError says what is wrong with it."""
    entry = entry.strip()
    if entry == "*":
        return entry
    if entry.startswith("*."):
        return "*." + idna(entry[2:])
    bare = entry[1:-1] if entry.startswith("[") and entry.endswith("]") else entry
    ip = ip_or_none(bare)
    if ip is not None:
        return str(ip)
    try:
        return idna(entry)
    except ValueError as exc:
        raise ValueError(
            f"webhook allow-list entry {entry!r}: expected a host name, an IP address, "
            f"'*.example.org' or '*' ({exc})"
        ) from exc
