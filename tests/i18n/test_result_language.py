"""The text/plain form of a network verb's result speaks the language chosen when it is shown."""
from __future__ import annotations

from IPython.lib.pretty import pretty

from labsupport.i18n import VARIABLE
from labsupport.results import CurlResult

ANSWERED = CurlResult(url="http://web", source="pod/client", status=200, body="web-1", pod="web-1",
                      namespace="default", node="lab-worker", client_ip="10.244.1.5")
REFUSED = CurlResult(url="http://web:81", source="pod/client", exit_code=7,
                     error="curl: (7) Failed to connect to web port 81: Connection refused")


def test_a_curl_result_reads_in_english_by_default(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    assert pretty(ANSWERED) == "<CurlResult 200 from pod 'web-1' on 'lab-worker', client_ip='10.244.1.5'>"
    assert pretty(REFUSED) == f"<CurlResult error: {REFUSED.error}>"


def test_a_curl_result_reads_in_russian_with_ru(monkeypatch):
    monkeypatch.setenv(VARIABLE, "ru")
    assert pretty(ANSWERED) == "<CurlResult 200 от пода 'web-1' на 'lab-worker', client_ip='10.244.1.5'>"
    assert str([ANSWERED]) == "[<CurlResult 200 от пода 'web-1' на 'lab-worker', client_ip='10.244.1.5'>]"
    # What curl printed stays curl's own words.
    assert pretty(REFUSED) == f"<CurlResult ошибка: {REFUSED.error}>"
