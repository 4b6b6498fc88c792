"""Which addresses the crawler may connect to: public ones, plus the networks the config allows.

Safe by default: private, loopback, link-local, multicast, reserved and unspecified
addresses are refused unless a network in ``network.allow_networks`` contains them, so a
public page cannot steer the crawler at the machine's own services.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache


class AddressPolicy:
    def __init__(self, allow_networks: list[str]) -> None:
        self.allowed = [ipaddress.ip_network(n, strict=False) for n in allow_networks]

    @lru_cache(maxsize=65536)
    def permits(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        if any(ip in net for net in self.allowed):
            return True
        return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_unspecified)


@lru_cache(maxsize=65536)
def is_ip(text: str) -> bool:
    """True for an IPv4 or IPv6 literal (behind a proxy a host name may stand in for an address)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
