"""Credentials in URLs never reach a file, a log line or an error message.

A base URL may carry credentials in its userinfo (``http://user:PASSWORD@host/v1``: the HTTP
client sends them to the server as basic authentication). Everything stratbench writes shows such
a URL as ``http://user:***@host/v1`` (a userinfo without a password, which may itself be a token,
as ``http://***@host/v1``):

* `redact_url(url)`: one URL;
* `redact_text(text)`: every URL with a userinfo inside a text (an error message, a traceback,
  a command line joined into one string);
* `redact_json(value)`: every string inside a JSON-like value (a run's config, its argv list).

Secrets known by value — an API key, a URL's password and the HTTP Basic form of its credentials,
which a server may echo in a reply — are masked wherever they appear by `redact_known`.

A URL written this way cannot be used to connect again: `is_redacted_url` tells a saved
(redacted) URL from one a user gave, so a resumed run asks for the real one instead of sending
``***`` as a password.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

#: what a password (or a userinfo without one) is replaced with
MASK = "***"

# scheme://userinfo@ — the userinfo runs to the last "@" before the end of the authority (the
# first "/", "?", "#" or whitespace), as urllib.parse.urlsplit reads it
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/?#\s@]*(?:@[^/?#\s@]*)*)@")


# scheme://user:…@ where the password holds a "/", "?" or "#" typed as is (a URL parser then finds
# no credentials, and took the password for a port, a path or a fragment: fuzz 25 A F5): the
# password runs to the last "@" before a space or a quote. Not applied where what follows the
# ":" up to the first "/", "?" or "#" is a port (http://host:8000/v1/a@b is a path's "@").
_LOOSE_USERINFO = re.compile(r"""(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/?#@:'"]*):([^\s'"]*)@""")


def _loose(text: str) -> str:
    def mask(m: re.Match[str]) -> str:
        head = re.split(r"[/?#]", m.group(3), maxsplit=1)[0]
        return m.group(0) if head.isdigit() else f"{m.group(1)}{m.group(2)}:{MASK}@"

    return _LOOSE_USERINFO.sub(mask, text)


def unparsed_credentials(url: str) -> bool:
    """Whether ``url`` holds a password that a URL parser does not find (one holding "/", "?" or
    "#" typed as is: it reads as a port, a path or a fragment)."""
    if "@" not in url:
        return False
    try:
        found = "@" in urlsplit(url).netloc
    except ValueError:
        found = False
    return not found and _loose(url) != url


def _mask_userinfo(userinfo: str) -> str:
    user, sep, _ = userinfo.partition(":")
    return f"{user}:{MASK}" if sep else MASK


def redact_url(url: str) -> str:
    """``url`` with the password of its userinfo (or a userinfo without one) replaced by ``***``,
    and its query and fragment too (``?***``: where a key may travel); a URL without either is
    returned unchanged. Never raises, even for a malformed URL."""
    if not isinstance(url, str):
        return url
    if unparsed_credentials(url):  # a password holding "/", "?" or "#" as typed
        return redact_url(_loose(url))
    if "?" in url or "#" in url:  # a query or fragment may carry a key (?api_key=…): never shown
        head = url.split("#", 1)[0].split("?", 1)[0]
        return redact_url(head) + ("?***" if "?" in url.split("#", 1)[0] else "") + ("#***" if "#" in url else "")
    if "@" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:  # malformed (e.g. "http://[::1"): the textual rule still applies
        return redact_text(url)
    if "@" not in parts.netloc:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    netloc = f"{_mask_userinfo(userinfo)}@{hostport}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def redact_text(text: str) -> str:
    """``text`` with every ``scheme://userinfo@`` in it redacted as `redact_url` does."""
    if not isinstance(text, str) or "@" not in text:
        return text
    return _loose(_USERINFO.sub(lambda m: f"{m.group(1)}{_mask_userinfo(m.group(2))}@", text))


def redact_json(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, tuples, strings, numbers) with every string
    passed through `redact_text`."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_json(v) for v in value)
    return value


def secret_forms(key: str | None = None, basic: str | None = None) -> list[str]:
    """The texts that give away an API key and URL credentials (``user:password``): the key, the
    password (the user name when there is none), and the credentials as an HTTP Basic header carries them (base64), which a server
    echoing its request headers shows."""
    forms = [key or ""]
    if basic:
        user, _, password = basic.partition(":")
        # a URL with a user name and no password (http://TOKEN@host/v1) carries a token as its user
        secret = password or user
        forms += [secret, base64.b64encode(basic.encode("utf-8")).decode("ascii")]
        # ... and as the URL holds it, percent-encoded ("@", ":" and "/" must be), which a server
        # echoing the URL shows (fuzz 25 A F4)
        for encoded in (quote(secret, safe=""), quote(secret), quote_plus(secret)):
            forms += [encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)]
    return list(dict.fromkeys(f for f in forms if f))


#: the shortest secret masked in what a model said (`models.base`'s results): a shorter key or
#: password is a placeholder or an ordinary word, not a secret a reply could give away
CONTENT_MIN_SECRET = 8


def redact_known(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each of ``secrets`` (`secret_forms`) replaced by ``***``.
    A secret under 3 characters is left alone: masking it would mask ordinary text, and it gives
    nothing away."""
    if not isinstance(text, str):
        return text
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 3 and secret in text:
            text = text.replace(secret, MASK)
    return text


def is_redacted_url(url: str) -> bool:
    """Whether ``url``'s credentials are the mask `redact_url` writes (a URL read back from a
    saved run, whose real password was never saved)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return MASK in (parts.password, parts.username) and "@" in parts.netloc


__all__ = ["CONTENT_MIN_SECRET", "MASK", "is_redacted_url", "redact_json", "redact_known", "redact_text", "redact_url", "secret_forms",
           "unparsed_credentials"]
