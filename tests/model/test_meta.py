"""Names, label keys and values, uids and timestamps."""
import random

from labsupport.model import meta

LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
               "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
               "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                 "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
                 "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def test_dns1123_label():
    assert meta.is_dns1123_label("my-name") == []
    assert meta.is_dns1123_label("123-abc") == []
    assert meta.is_dns1123_label("My_Name") == [LABEL_MSG]
    assert meta.is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]
    assert meta.is_dns1123_label("a.b") == ["must not contain dots"]


def test_dns1035_label():
    assert meta.is_dns1035_label("web") == []
    assert meta.is_dns1035_label("1web") == [DNS1035_MSG]
    assert meta.is_dns1035_label("web-") == [DNS1035_MSG]
    assert meta.is_dns1035_label("a" * 64) == ["must be no more than 63 characters"]


def test_dns1123_subdomain():
    assert meta.is_dns1123_subdomain("web.example.com") == []
    assert meta.is_dns1123_subdomain("Web") == [SUBDOMAIN_MSG]
    assert meta.is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


def test_generate_name_prefix_allows_trailing_dash():
    assert meta.name_is_dns1035_label("web-", prefix=True) == []
    assert meta.name_is_dns1035_label("web-", prefix=False) == [DNS1035_MSG]


def test_label_keys_and_values():
    assert meta.is_label_key("app") == []
    assert meta.is_label_key("kubernetes.io/service-name") == []
    assert meta.is_label_key("/app") == ["prefix part must be non-empty"]
    assert meta.is_label_key("x/") == ["name part must be non-empty"]
    assert meta.is_label_key("a" * 64) == ["name part must be no more than 63 characters"]
    assert meta.is_label_value("") == []
    assert meta.is_label_value("v1.2_x") == []
    assert meta.is_label_value("-x") == [
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
        "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]


def test_uid_timestamp_and_suffix():
    a = meta.new_uid(random.Random(1))
    assert a == meta.new_uid(random.Random(1))
    assert len(a) == 36 and a[14] == "4"
    assert meta.rfc3339(1796232600) == "2026-12-02T17:30:00Z"
    assert meta.rfc3339_nano(1796232600.25) == "2026-12-02T17:30:00.25Z"
    suffix = meta.generate_name_suffix(random.Random(0))
    assert len(suffix) == 5 and set(suffix) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert len(meta.generate_name_suffix(random.Random(0), n=10)) == 10
