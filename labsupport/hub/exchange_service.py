"""The class's exchange as a JupyterHub service: nbgrader's release, fetch, submit, collect and feedback over HTTP,
with the hub saying who is asking.

The hub starts it (`c.JupyterHub.services`, as the account that alone owns the store) and its proxy routes
`/services/exchange/` to it. Every request carries a hub token (`Authorization: token …`: a student's server has
JUPYTERHUB_API_TOKEN); the service asks the hub whose it is (`HubAuth`), then the hub again what that user is in the
course, with its own token: the **instructor** is the hub's admin or in the group `instructors` (or nbgrader's
`formgrade-COURSE`), a **student** is in nbgrader's group `nbgrader-COURSE`. Nobody else gets anything.

    GET    api/courses/C/assignments                          released assignments          students, instructor
    GET    api/courses/C/assignments/A                        fetch one                     students, instructor
    PUT    api/courses/C/assignments/A[?force=1]              release                       instructor
    DELETE api/courses/C/assignments/A                        take back                     instructor
    POST   api/courses/C/assignments/A/submissions            hand in                       students
    GET    api/courses/C/assignments/A/submissions[?student=] receipts                      instructor; a student
                                                                                            their own only
    GET    api/courses/C/assignments/A/submissions/S/ID       one hand-in                   instructor; its owner
    PUT    api/courses/C/assignments/A/submissions/S/ID/feedback   release feedback         instructor
    GET    api/courses/C/assignments/A/submissions/S/ID/feedback   fetch feedback           instructor; its owner
    GET    api/courses/C                                      who am I here                 anyone with a token

A hand-in is filed under the name the hub gave (a `student` field naming anyone else is refused, 403), stamped with
the service's clock when its last byte arrived, capped in bytes and files before it is read (413), checked (each
file a notebook nbformat validates or a released file, none of nbgrader's bookkeeping) and kept whole
(`ExchangeStore`). Every refusal is JSON, `{"error": "…"}`, a sentence that says what is wrong and what to do.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
import urllib.parse
from typing import Any, Callable

from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.httpserver import HTTPServer

from labsupport.errors import LabError
from labsupport.grading.exchange_wire import HandInError, TooBig, check_id, decode, encode
from labsupport.hub.exchange_store import ExchangeStore, StoreError, utcnow
from labsupport.i18n import tr

#: The service's name in the hub (its URL is /services/exchange/).
SERVICE_NAME = "exchange"
#: The hub group whose members are instructors of every course the service serves.
INSTRUCTORS_GROUP = "instructors"
log = logging.getLogger("labsupport.exchange")


def students_group(course: str) -> str:
    """The hub group of a course's students (nbgrader's own JupyterHub convention)."""
    return f"nbgrader-{course}"


def instructors_group(course: str) -> str:
    """The hub group of a course's instructors (nbgrader's convention), besides `instructors` and the hub's admins."""
    return f"formgrade-{course}"


class Refused(LabError, web.HTTPError):
    """A request answered with `status` and a sentence for whoever sent it."""

    def __init__(self, status: int, message: str):
        super().__init__(status, log_message=message.replace("%", "%%"))
        self.message = message


class HubRoles:
    """What a user is in a course, asked of the hub with the service's own token (admin flag and groups), kept for
    `ttl` seconds."""

    def __init__(self, api_url: str, token: str, ttl: float = 10.0):
        self.api_url, self.token, self.ttl = api_url.rstrip("/"), token, ttl
        self._seen: dict[str, tuple[float, dict[str, Any] | None]] = {}

    async def model(self, name: str) -> dict[str, Any] | None:
        """The hub's model of `name` (admin, groups), None when the hub has no such user."""
        now = time.monotonic()
        seen = self._seen.get(name)
        if seen and now - seen[0] < self.ttl:
            return seen[1]
        request = HTTPRequest(f"{self.api_url}/users/{urllib.parse.quote(name, safe='')}",
                              headers={"Authorization": f"token {self.token}"}, request_timeout=30)
        try:
            answer = await AsyncHTTPClient().fetch(request)
            model = json.loads(answer.body)
        except HTTPClientError as e:
            if e.code != 404:
                raise
            model = None
        self._seen[name] = (now, model)
        return model

    async def role(self, name: str, course: str) -> str | None:
        """`instructor`, `student` or None."""
        model = await self.model(name)
        if not model:
            return None
        groups = set(model.get("groups") or ())
        if model.get("admin") or INSTRUCTORS_GROUP in groups or instructors_group(course) in groups:
            return "instructor"
        if students_group(course) in groups:
            return "student"
        return None


class ExchangeHandler(web.RequestHandler):
    """Authenticates every request with the hub and answers errors as JSON sentences."""

    #: Who may call each method: a set of roles.
    allowed: dict[str, set[str]] = {}
    #: The largest body each method takes (bytes on the wire); 0 for none.
    body_limit: dict[str, int] = {}

    @property
    def store(self) -> ExchangeStore:
        return self.settings["store"]

    def set_default_headers(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
        self.set_header("X-Content-Type-Options", "nosniff")

    def check_xsrf_cookie(self) -> None:
        """Tokens only, never cookies: there is nothing a forged cross-site request could ride on."""

    async def prepare(self) -> None:
        """Who is asking (the hub's answer for their token) and what they are in the course; refused before a byte
        of the body is kept."""
        hub_auth = self.settings["hub_auth"]
        token = hub_auth.get_token(self, in_cookie=False)
        if not token:
            raise Refused(401, tr("the exchange needs your JupyterHub token: send `Authorization: token …` (in a "
                                  "server the hub started it is $JUPYTERHUB_API_TOKEN)"))
        user = await hub_auth.user_for_token(token, sync=False)
        if not user:
            raise Refused(401, tr("the hub does not know this token (expired or revoked): get a new one from the "
                                  "hub's Token page, or restart your server"))
        if not hub_auth.check_scopes(hub_auth.access_scopes, user):
            raise Refused(403, tr("this token may not use the exchange (it lacks {scope}): use the token of your "
                                  "server, which has it", scope=", ".join(sorted(hub_auth.access_scopes))))
        self.user = user["name"]
        course = self.path_kwargs.get("course")
        if course is not None:
            if course not in self.settings["courses"]:
                raise Refused(404, tr("no course {course!r} here: this exchange serves {courses}", course=course,
                                      courses=", ".join(sorted(self.settings["courses"]))))
            self.role = await self.settings["roles"].role(self.user, course)
            allowed = self.allowed.get(self.request.method, set())
            if self.role not in allowed:
                raise Refused(403, self.refusal(course))
        # A body past the method's limit is read and dropped, then answered 413: a client that is still sending
        # when the answer comes would see its connection reset instead of the reason.
        self._body: list[bytes] = []
        self._size = 0

    def refusal(self, course: str) -> str:
        """Why this user may not do this here."""
        if self.role is None:
            return tr("{user} is neither a student nor an instructor of {course} (the hub's groups {students} and "
                      "{instructors}): ask the instructor to add you", user=self.user, course=course,
                      students=students_group(course), instructors=INSTRUCTORS_GROUP)
        return tr("{user} is {role} of {course} and may not {action}", user=self.user, course=course,
                  role=tr("a student") if self.role == "student" else tr("an instructor"), action=self.action())

    def action(self) -> str:
        """What the refused request would have done, in words."""
        return tr("do this")

    def too_big(self, size: int, limit: int) -> Refused:
        if limit == 0:
            return Refused(400, tr("this request takes no body"))
        return Refused(413, tr("the request is {size} bytes, over the exchange's cap of {limit} bytes ({caps})",
                               size=size, limit=limit, caps=self.settings["store"].caps.handin.describe()))

    def data_received(self, chunk: bytes) -> None:
        """Keep the body up to the method's limit (past it, the rest is read and dropped: the answer is 413)."""
        self._size += len(chunk)
        if self._size <= self.body_limit.get(self.request.method, 0):
            self._body.append(chunk)

    def json_body(self) -> Any:
        """The request's body as JSON; 413 past the method's limit, 400 when it is not JSON."""
        limit = self.body_limit.get(self.request.method, 0)
        if self._size > limit:
            raise self.too_big(self._size, limit)
        if not self._body and self.request.body:
            self._body = [self.request.body]
        try:
            return json.loads(b"".join(self._body))
        except ValueError as e:
            raise Refused(400, tr("the request's body is not JSON ({error})", error=e)) from None

    def reply(self, status: int, value: Any) -> None:
        self.set_status(status)
        self.finish(json.dumps(value))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        error = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(error, "message", None) or self._reason
        if status_code >= 500:
            message = tr("the exchange failed ({reason}): tell the instructor, who finds the cause in the hub's log",
                         reason=self._reason)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": message}))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, Refused):
            log.warning("%s %s by %s: %d %s", self.request.method, self.request.path, getattr(self, "user", "-"),
                        value.status_code, value.message)
        else:
            super().log_exception(typ, value, tb)

    async def run(self, work: Callable[[], Any]) -> Any:
        """Run store work in a thread (reading and writing files, validating notebooks), refusals as 4xx."""
        try:
            return await asyncio.get_running_loop().run_in_executor(None, work)
        except TooBig as e:
            raise Refused(413, str(e)) from None
        except HandInError as e:
            raise Refused(400, str(e)) from None
        except StoreError as e:
            if e.status >= 500:
                raise
            raise Refused(e.status, str(e)) from None

    def own(self, student: str) -> None:
        """A student may reach their own hand-ins only."""
        if self.role == "student" and student != self.user:
            raise Refused(403, tr("you are {user}: you may see your own hand-ins only, not {student}'s",
                                  user=self.user, student=str(student)))


def _upload(caps: Any) -> int:
    """Bytes on the wire of a bundle within `caps` (base64 is 4/3, plus the JSON around it)."""
    return caps.bytes * 4 // 3 + 512 * caps.files + 65536


class CourseHandler(ExchangeHandler):
    allowed = {"GET": {"student", "instructor", None}}

    async def get(self, course: str) -> None:
        self.reply(200, {"course": course, "user": self.user, "role": self.role})


class AssignmentsHandler(ExchangeHandler):
    allowed = {"GET": {"student", "instructor"}}

    async def get(self, course: str) -> None:
        self.reply(200, {"assignments": await self.run(lambda: self.store.released(course))})


@web.stream_request_body
class AssignmentHandler(ExchangeHandler):
    allowed = {"GET": {"student", "instructor"}, "PUT": {"instructor"}, "DELETE": {"instructor"}}

    def initialize(self) -> None:
        self.body_limit = {"PUT": _upload(self.settings["store"].caps.release)}

    def action(self) -> str:
        return tr("release an assignment or take it back")

    async def get(self, course: str, assignment: str) -> None:
        meta, files = await self.run(lambda: self.store.fetch(course, assignment))
        self.reply(200, {**meta, **encode(files)})

    async def put(self, course: str, assignment: str) -> None:
        force = self.get_query_argument("force", "") in ("1", "true", "yes")
        caps = self.store.caps.release
        body = self.json_body()
        meta = await self.run(lambda: self.store.release(course, assignment, decode(body, caps), force=force))
        log.info("%s released %s/%s (%d files)", self.user, course, assignment, len(meta["files"]))
        self.reply(201, meta)

    async def delete(self, course: str, assignment: str) -> None:
        await self.run(lambda: self.store.unrelease(course, assignment))
        self.reply(200, {"assignment": assignment, "released": None})


@web.stream_request_body
class SubmissionsHandler(ExchangeHandler):
    allowed = {"GET": {"student", "instructor"}, "POST": {"student"}}

    def initialize(self) -> None:
        self.body_limit = {"POST": _upload(self.settings["store"].caps.handin)}

    def action(self) -> str:
        return tr("hand in (an instructor collects; hand in from a student's account)")

    async def get(self, course: str, assignment: str) -> None:
        student = self.get_query_argument("student", None)
        if self.role == "student":
            self.own(student or self.user)
            student = self.user
        self.reply(200, {"submissions": await self.run(lambda: self.store.submissions(course, assignment,
                                                                                     student))})

    async def post(self, course: str, assignment: str) -> None:
        received = utcnow()
        body = self.json_body()
        claimed = body.pop("student", None) if isinstance(body, dict) else None
        if claimed is not None and claimed != self.user:
            raise Refused(403, tr("you are logged in as {user}, and a hand-in is filed under the name you logged in "
                                  "with: you cannot hand in as {claimed!r}", user=self.user, claimed=claimed))
        receipt = await self.run(lambda: self.store.submit(course, assignment, self.user, decode(body),
                                                           received))
        log.info("%s handed in %s/%s at %s (%d bytes, %d files, id %s)", self.user, course, assignment,
                 receipt["received"], receipt["size"], len(receipt["files"]), receipt["id"])
        self.reply(201, receipt)


class HandInHandler(ExchangeHandler):
    allowed = {"GET": {"student", "instructor"}}

    async def get(self, course: str, assignment: str, student: str, handin: str) -> None:
        self.own(student)
        receipt, files = await self.run(lambda: self.store.handin(course, assignment, student, handin))
        self.reply(200, {**receipt, **encode(files)})


@web.stream_request_body
class FeedbackHandler(ExchangeHandler):
    allowed = {"GET": {"student", "instructor"}, "PUT": {"instructor"}}

    def initialize(self) -> None:
        self.body_limit = {"PUT": _upload(self.settings["store"].caps.feedback)}

    def action(self) -> str:
        return tr("release feedback")

    async def get(self, course: str, assignment: str, student: str, handin: str) -> None:
        self.own(student)
        files = await self.run(lambda: self.store.feedback(course, assignment, student, handin))
        self.reply(200, encode(files))

    async def put(self, course: str, assignment: str, student: str, handin: str) -> None:
        caps = self.store.caps.feedback
        body = self.json_body()
        receipt = await self.run(lambda: self.store.put_feedback(course, assignment, student, handin,
                                                                 decode(body, caps)))
        log.info("%s released feedback on %s/%s of %s (hand-in %s)", self.user, course, assignment, student, handin)
        self.reply(201, receipt)


class NotFoundHandler(ExchangeHandler):
    async def prepare(self) -> None:
        raise Refused(404, tr("the exchange has no {path}: its API is under {prefix}api/courses/…",
                              path=self.request.path, prefix=self.settings["prefix"]))


def make_app(store: ExchangeStore, hub_auth: Any, roles: HubRoles, courses: set[str],
             prefix: str = "/services/exchange/") -> web.Application:
    """The service's tornado application under `prefix`."""
    api = prefix + "api/courses/"
    handlers = [
        (api + r"(?P<course>[^/]+)", CourseHandler),
        (api + r"(?P<course>[^/]+)/assignments", AssignmentsHandler),
        (api + r"(?P<course>[^/]+)/assignments/(?P<assignment>[^/]+)", AssignmentHandler),
        (api + r"(?P<course>[^/]+)/assignments/(?P<assignment>[^/]+)/submissions", SubmissionsHandler),
        (api + r"(?P<course>[^/]+)/assignments/(?P<assignment>[^/]+)/submissions/(?P<student>[^/]+)/"
         r"(?P<handin>[^/]+)", HandInHandler),
        (api + r"(?P<course>[^/]+)/assignments/(?P<assignment>[^/]+)/submissions/(?P<student>[^/]+)/"
         r"(?P<handin>[^/]+)/feedback", FeedbackHandler),
        (r".*", NotFoundHandler),
    ]
    return web.Application(handlers, store=store, hub_auth=hub_auth, roles=roles, courses=set(courses),
                           prefix=prefix, xsrf_cookies=False)


def hub_auth_from_env(cache_seconds: float = 30.0) -> Any:
    """JupyterHub's HubAuth for this service, from the environment the hub gives it; tokens in a header only."""
    from jupyterhub.services.auth import HubAuth
    return HubAuth(cache_max_age=int(cache_seconds), allow_token_in_url=False)


def main(argv: list[str] | None = None) -> int:
    """`python -m labsupport.hub.exchange_service --root DIR --course ID`: run the service the hub manages."""
    parser = argparse.ArgumentParser(description="the class's nbgrader exchange, a JupyterHub service")
    parser.add_argument("--root", required=True, help="the store: a folder only this account may enter")
    parser.add_argument("--course", action="append", required=True, help="a course id it serves (repeatable)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="[%(levelname).1s %(asctime)s exchange] %(message)s")
    for name in (log.name, "tornado.access"):
        logging.getLogger(name).setLevel(logging.INFO)
    for course in args.course:
        check_id("course", course)
    store = ExchangeStore(args.root)
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/exchange/")
    url = urllib.parse.urlparse(os.environ["JUPYTERHUB_SERVICE_URL"])

    async def serve() -> None:
        hub_auth = hub_auth_from_env()
        roles = HubRoles(hub_auth.api_url, hub_auth.api_token)
        app = make_app(store, hub_auth, roles, set(args.course), prefix)
        biggest = max(_upload(store.caps.release), _upload(store.caps.feedback), _upload(store.caps.handin))
        server = HTTPServer(app, max_body_size=biggest, max_buffer_size=biggest)
        server.listen(url.port, url.hostname)
        log.info("serving %s at %s%s, store %s", ", ".join(args.course), url.geturl().rstrip("/"), prefix,
                 args.root)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["make_app", "HubRoles", "main", "SERVICE_NAME", "INSTRUCTORS_GROUP", "students_group",
           "instructors_group", "Refused"]
