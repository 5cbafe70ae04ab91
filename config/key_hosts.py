"""Which API-key variable may be sent to which host: the MODEL_KEY_HOSTS setting, parsed and checked.

A model source names the environment variable holding its key and the URL the key is sent to, and
coordinators edit both. So the server's operator binds each key variable to the hosts it may go to:

    MODEL_KEY_HOSTS=OPENAI_API_KEY=api.openai.com,AZURE_API_KEY=*.openai.azure.com,LLAMA_API_KEY=127.0.0.1:8080

Entries are `VARIABLE=HOST`, comma-separated; repeat a variable to allow it several hosts. HOST is a name,
an IPv4 address or a bracketed IPv6 address, optionally with `:PORT` (without one, any port of that host);
`*.example.com` allows every subdomain of example.com (not example.com itself). A variable not listed is
sent nowhere. Whatever the binding, a key never travels over plain http:// except to a loopback address
(127.0.0.0/8, ::1, localhost).

Pure Python, no Django: config/settings.py parses the setting at start-up (a malformed value stops the
server), engine/llm_client.py checks every request before it reads a key.
"""

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

# Only variables named like API keys may be read: naming, say, SECRET_KEY or DATABASE_URL would send the
# server's own secrets to the source's URL as a bearer token.
API_KEY_VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]*_API_(KEY|TOKEN)\Z")
_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
_HOST_NAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*\Z")
_PORT = re.compile(r"^[0-9]{1,5}\Z")
LOOPBACK_NAMES = {"localhost"}


class KeyNotAllowed(ValueError):
    """The key may not go to this URL. `field` is the source's field to change (api_key_env or base_url)."""

    def __init__(self, message: str, *, field: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class HostPattern:
    host: str  # lower-case name or IP address; for a wildcard, the domain after "*."
    port: int | None = None
    wildcard: bool = False

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.wildcard:
            return host.endswith("." + self.host)
        return host == self.host

    def __str__(self) -> str:
        host = f"*.{self.host}" if self.wildcard else f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" if self.port is not None else host


def check_variable_name(variable: str) -> None:
    if not API_KEY_VARIABLE.match(variable):
        raise KeyNotAllowed(
            f"{variable!r} is not accepted as an API-key variable: the name must end in _API_KEY or _API_TOKEN "
            "(e.g. OPENAI_API_KEY), so that no other secret of the server can be sent to a model endpoint",
            field="api_key_env",
        )


def parse_host_pattern(text: str) -> HostPattern:
    """`name`, `name:port`, `*.domain[:port]`, `1.2.3.4[:port]`, `[::1][:port]`; raises ValueError."""
    if "/" in text:
        raise ValueError(f"{text!r} is not a host name or address (no scheme or path: api.openai.com, not a URL)")
    if text.startswith("["):
        address, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"{text!r} is not a host: write an IPv6 address as [::1] or [::1]:8080")
        host, port_text = address, rest[1:] if rest else None
        try:
            host = str(ipaddress.IPv6Address(host))
        except ValueError:
            raise ValueError(f"{text!r}: {address!r} is not an IPv6 address") from None
    else:
        host, _, port_text = text.partition(":")
        port_text = port_text if ":" in text else None
    port = None
    if port_text is not None:
        if not _PORT.match(port_text) or not 1 <= int(port_text) <= 65535:
            raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
        port = int(port_text)
    host = host.lower()
    wildcard = host.startswith("*.")
    if wildcard:
        host = host[2:]
        if host.count(".") < 1 or not _HOST_NAME.match(host):
            raise ValueError(f"{text!r}: a wildcard covers the subdomains of a domain, e.g. *.openai.azure.com")
    elif ":" not in host and not _HOST_NAME.match(host):
        raise ValueError(f"{text!r} is not a host name or address (no scheme or path: api.openai.com, not a URL)")
    return HostPattern(host=host, port=port, wildcard=wildcard)


def parse_key_hosts(value: str) -> dict[str, tuple[HostPattern, ...]]:
    """MODEL_KEY_HOSTS -> {variable: host patterns}; raises ValueError naming the malformed entry."""
    bindings: dict[str, list[HostPattern]] = {}
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        variable, equals, host = (piece.strip() for piece in entry.partition("="))
        if not equals or not host:
            raise ValueError(f"{entry!r} is not VARIABLE=HOST (e.g. OPENAI_API_KEY=api.openai.com)")
        try:
            check_variable_name(variable)
        except KeyNotAllowed as error:
            raise ValueError(str(error)) from None
        bindings.setdefault(variable, []).append(parse_host_pattern(host))
    return {variable: tuple(patterns) for variable, patterns in bindings.items()}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_key_destination(*, variable: str, url: str, bindings: dict[str, tuple[HostPattern, ...]]) -> None:
    """Raise KeyNotAllowed unless the key in `variable` may be sent to `url`."""
    check_variable_name(variable)
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    host = parts.hostname or ""
    if parts.scheme not in {"http", "https"} or not host or port == -1 or "@" in parts.netloc:
        raise KeyNotAllowed(
            f"{url!r} is not a URL an API key can be sent to (http:// or https://, a host, no user name)",
            field="base_url",
        )
    if variable not in bindings:
        raise KeyNotAllowed(
            f"{variable} may not be sent anywhere: MODEL_KEY_HOSTS has no entry for it. The server's operator "
            f"binds each API-key variable to the hosts it may be sent to, e.g. MODEL_KEY_HOSTS={variable}={host}",
            field="api_key_env",
        )
    port = port or (443 if parts.scheme == "https" else 80)
    allowed = bindings[variable]
    if not any(pattern.matches(host, port) for pattern in allowed):
        listed = ", ".join(str(pattern) for pattern in allowed)
        raise KeyNotAllowed(
            f"{variable} may be sent only to {listed} (MODEL_KEY_HOSTS), not to {parts.netloc}: "
            "use one of those hosts, or ask the server's operator to bind the variable to this one",
            field="base_url",
        )
    if parts.scheme != "https" and not is_loopback(host):
        raise KeyNotAllowed(
            f"{variable} would travel unencrypted to {parts.netloc}: use https:// (plain http:// is allowed "
            "only to a loopback address: 127.0.0.0/8, ::1, localhost)",
            field="base_url",
        )
