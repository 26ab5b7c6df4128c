"""Object names, label keys and values, with the API server's exact validation messages; uids and timestamps."""
from __future__ import annotations

import random
import re
import time
import uuid

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"

DNS1123_LABEL_ERR = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                     "and must start and end with an alphanumeric character")
DNS1123_SUBDOMAIN_ERR = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                         "'-' or '.', and must start and end with an alphanumeric character")
DNS1035_LABEL_ERR = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                     "alphabetic character, and end with an alphanumeric character")
QUALIFIED_NAME_ERR = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                      "alphanumeric character")
LABEL_VALUE_ERR = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                   "and must start and end with an alphanumeric character")

_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = re.compile(DNS1035_LABEL_FMT)
_QUALIFIED_NAME_RE = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)

NAME_REQUIRED = "name or generateName is required"

# Kubernetes' random-string alphabet: no vowels (no accidental words), no confusable 0/1/3.
GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_GENERATED_NAME_LENGTH = 58


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """The apimachinery wording for a value that fails a regex, with its examples."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    text = message + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """`must be no more than N characters`."""
    return f"must be no more than {length} characters"


def _full(regex: re.Pattern, value: str) -> bool:
    return regex.fullmatch(value) is not None


def is_dns1123_label(value: str) -> list[str]:
    """Problems with `value` as an RFC 1123 label (namespace names, container names); empty when valid."""
    errs = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _full(_DNS1123_LABEL_RE, value):
        if _full(_DNS1123_SUBDOMAIN_RE, value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """Problems with `value` as an RFC 1123 subdomain (most object names); empty when valid."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _full(_DNS1123_SUBDOMAIN_RE, value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    """Problems with `value` as a DNS-1035 label (Service names); empty when valid."""
    errs = []
    if len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _full(_DNS1035_LABEL_RE, value):
        errs.append(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def _mask_trailing_dash(name: str) -> str:
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns1123_label(name: str, prefix: bool = False) -> list[str]:
    """Object-name check for kinds named by a DNS-1123 label (Namespace); `prefix` allows a trailing dash."""
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1123_subdomain(name: str, prefix: bool = False) -> list[str]:
    """Object-name check for kinds named by a DNS-1123 subdomain (Pod, Deployment, ConfigMap …)."""
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool = False) -> list[str]:
    """Object-name check for kinds named by a DNS-1035 label (Service)."""
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def is_qualified_name(value: str) -> list[str]:
    """Problems with `value` as a qualified name (`[prefix/]name`, e.g. a label key); empty when valid."""
    errs = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name " + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                  "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if name and not _full(_QUALIFIED_NAME_RE, name):
        errs.append("name part " + regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name",
                                               "123-abc"))
    return errs


def is_label_key(value: str) -> list[str]:
    """Problems with `value` as a label key; empty when valid."""
    return is_qualified_name(value)


def is_label_value(value: str) -> list[str]:
    """Problems with `value` as a label value; empty when valid (the empty string is valid)."""
    errs = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _full(_LABEL_VALUE_RE, value):
        errs.append(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def new_uid(rng: random.Random) -> str:
    """A version-4 UUID drawn from `rng`, so a seeded cluster repeats its uids."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def rfc3339(seconds: float) -> str:
    """Seconds since the epoch as the API server writes timestamps: `2026-12-02T17:30:00Z`."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(seconds)))


def rfc3339_nano(seconds: float) -> str:
    """Seconds since the epoch with nanoseconds, trailing zeros trimmed (Go's RFC3339Nano)."""
    whole = int(seconds)
    nanos = int(round((seconds - whole) * 1e9))
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    if nanos:
        base += "." + f"{nanos:09d}".rstrip("0")
    return base + "Z"


def generate_name_suffix(rng: random.Random, n: int = 5) -> str:
    """A random suffix from Kubernetes' alphabet `bcdfghjklmnpqrstvwxz2456789` (`7p4k2`)."""
    return "".join(rng.choice(GENERATE_NAME_ALPHABET) for _ in range(n))


def generate_name(base: str, rng: random.Random) -> str:
    """The name the API server makes from a `generateName` (base trimmed to 58 characters, plus 5 random)."""
    if len(base) > MAX_GENERATED_NAME_LENGTH:
        base = base[:MAX_GENERATED_NAME_LENGTH]
    return base + generate_name_suffix(rng)
