"""The FastAPI and Starlette apps of tests/python/test_adapters.py, served by uvicorn: RW_APP = fastapi | starlette,
RW_TEST_STORE, RW_TEST_PREFIX, RW_TEST_OPTIONS (JSON: more options). Route limits: /login 5/minute per username
(a form field), /items 3/minute per address, /user/{n} 2/minute per user id (an int), /twice two 2/minute limits
per address, /s1 and /s2 one 3/minute scope, /api 100000/minute per X-API-Key, /me 2/minute per user (X-User
authenticates) else address, /pair 1/minute per (X-A, address), /signin 3 failures (4xx) a minute per username (count_when; with X-Slow the answer takes 0.6 s); /free has only the app-wide and default limits;
/health is exempt. Routers: /r/x 1/minute (an included APIRouter, or a Starlette Mount of routes); FastAPI only:
/r/starlette and /r/deeper/z, plain Starlette routes (add_route) of an included router and of a router included in it
(the default limit); /plain a plain ASGI app mounted (the app-wide and default limits); POST /late includes (FastAPI) or adds (Starlette) /late/y, 1/minute,
after the app has served requests."""

import asyncio
import json
import os

from starlette.requests import Request

from ratewarden import KeyList, keys
from ratewarden.asgi import RateLimiter

KIND = os.environ["RW_APP"]
OPTIONS = {"store": os.environ["RW_TEST_STORE"], "prefix": os.environ["RW_TEST_PREFIX"],
           **json.loads(os.environ.get("RW_TEST_OPTIONS", "{}"))}


async def custom_refusal(request, refusal):  # RW_CUSTOM_REFUSAL: the refusal option as a function (may be async)
    from starlette.responses import JSONResponse

    return JSONResponse({"policy": refusal.name, "wait": refusal.retry_after}, 429)


if os.environ.get("RW_CUSTOM_REFUSAL"):
    OPTIONS["refusal"] = custom_refusal
for _list in ("allow_list", "deny_list"):  # given by name: the KeyList of that name on the store
    if _list in OPTIONS:
        OPTIONS[_list] = KeyList(OPTIONS[_list], OPTIONS["store"])
limiter = RateLimiter(**OPTIONS)


def failed(status):  # count_when: only failed sign-ins count
    return status >= 400


def user_id(request):  # an int key: accepted as its decimal text
    return int(request.path_params["n"])


ME = keys.first(keys.user(), keys.address())
PAIR = keys.combine(keys.header("X-A"), keys.address())


class HeaderAuth:  # Starlette's authentication: X-User names the user
    async def authenticate(self, conn):
        from starlette.authentication import AuthCredentials, SimpleUser

        name = conn.headers.get("x-user")
        return (AuthCredentials(["authenticated"]), SimpleUser(name)) if name else None


async def plain_app(scope, receive, send):  # a plain ASGI app, mounted at /plain
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"plain"})


@limiter.limit("1/minute")
async def in_router(request: Request):  # FastAPI and Starlette alike
    from starlette.responses import PlainTextResponse

    return PlainTextResponse("x")


@limiter.limit("1/minute")
async def late_route(request: Request):
    from starlette.responses import PlainTextResponse

    return PlainTextResponse("y")


async def starlette_route(request: Request):  # no limit of its own
    from starlette.responses import PlainTextResponse

    return PlainTextResponse("s")


async def deeper_route(request: Request):
    from starlette.responses import PlainTextResponse

    return PlainTextResponse("z")


if KIND == "fastapi":  # limit() on most routes, depends() on /login and /twice
    from fastapi import FastAPI
    from fastapi.responses import PlainTextResponse

    from starlette.middleware.authentication import AuthenticationMiddleware

    app = FastAPI()
    limiter.init_app(app)
    app.add_middleware(AuthenticationMiddleware, backend=HeaderAuth())

    from fastapi import Form

    @app.post("/signin")
    @limiter.limit("3/minute", key=keys.form("username"), count_when=failed)
    async def signin(request: Request, password: str = Form()):
        if request.headers.get("x-slow"):  # the answer takes 0.6 s (a test stops the store meanwhile)
            await asyncio.sleep(0.6)
        return PlainTextResponse("welcome", 200 if password == "right" else 401)

    @app.get("/me")
    @limiter.limit("2/minute", key=ME)
    async def me():
        return PlainTextResponse("me")

    @app.get("/pair")
    @limiter.limit("1/minute", key=PAIR)
    async def pair():
        return PlainTextResponse("pair")

    @app.post("/login", dependencies=[limiter.depends("5/minute", key=keys.form("username"))])
    async def login():
        return PlainTextResponse("welcome")

    @app.get("/items")
    @limiter.limit("3/minute")
    async def items():
        return PlainTextResponse("items")

    @limiter.limit("2/minute", key=user_id)  # either side of the route decorator
    @app.get("/user/{n}")
    async def user(n: int):
        return PlainTextResponse(f"user {n}")

    @app.get("/twice", dependencies=[limiter.depends("2/minute"), limiter.depends("2/minute")])
    async def twice():
        return PlainTextResponse("twice")

    @app.get("/s1")
    @limiter.shared_limit("3/minute", "search")
    async def s1():
        return PlainTextResponse("s1")

    @app.get("/s2")
    @limiter.shared_limit("3/minute", "search")
    async def s2():
        return PlainTextResponse("s2")

    @app.get("/api")
    @limiter.limit("100000/minute", key=keys.header("X-API-Key"))
    async def api():
        return PlainTextResponse("api")

    @app.get("/free")
    async def free():
        return PlainTextResponse("free")

    @app.get("/health")
    @limiter.exempt
    async def health():
        return PlainTextResponse("ok")

    from fastapi import APIRouter

    included = APIRouter(prefix="/r")
    included.add_api_route("/x", in_router)
    # Plain Starlette routes, which FastAPI answers through copies made for the include (add_route takes the path as
    # it is; an include adds its prefixes).
    included.add_route("/r/starlette", starlette_route)
    deeper = APIRouter()
    deeper.add_route("/z", deeper_route)
    included.include_router(deeper, prefix="/deeper")
    app.include_router(included)
    app.mount("/plain", plain_app)
    late = APIRouter(prefix="/late")
    late.add_api_route("/y", late_route)

    @app.post("/late")
    @limiter.exempt
    async def include_late():
        app.include_router(late)
        return PlainTextResponse("included")

elif KIND == "starlette":
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    @limiter.limit("5/minute", key=keys.form("username"))
    async def login(request):
        return PlainTextResponse("welcome")

    @limiter.limit("3/minute")
    async def items(request):
        return PlainTextResponse("items")

    @limiter.limit("2/minute", key=user_id)
    async def user(request):
        return PlainTextResponse(f"user {request.path_params['n']}")

    @limiter.limit("2/minute")
    @limiter.limit("2/minute")
    async def twice(request):
        return PlainTextResponse("twice")

    @limiter.shared_limit("3/minute", "search")
    async def s1(request):
        return PlainTextResponse("s1")

    @limiter.shared_limit("3/minute", "search")
    async def s2(request):
        return PlainTextResponse("s2")

    @limiter.limit("100000/minute", key=keys.header("X-API-Key"))
    async def api(request):
        return PlainTextResponse("api")

    async def free(request):
        return PlainTextResponse("free")

    @limiter.exempt
    async def health(request):
        return PlainTextResponse("ok")

    @limiter.limit("3/minute", key=keys.form("username"), count_when=failed)
    async def signin(request):
        form = await request.form()
        if request.headers.get("x-slow"):
            await asyncio.sleep(0.6)
        return PlainTextResponse("welcome", 200 if form.get("password") == "right" else 401)

    @limiter.limit("2/minute", key=ME)
    async def me(request):
        return PlainTextResponse("me")

    @limiter.limit("1/minute", key=PAIR)
    async def pair(request):
        return PlainTextResponse("pair")

    from starlette.middleware import Middleware
    from starlette.middleware.authentication import AuthenticationMiddleware

    from starlette.routing import Mount, Router

    late_router = Router()

    @limiter.exempt
    async def add_late(request):
        late_router.routes.append(Route("/y", late_route))
        return PlainTextResponse("added")

    app = Starlette(middleware=[Middleware(AuthenticationMiddleware, backend=HeaderAuth())], routes=[
        Route("/me", me), Route("/pair", pair), Route("/signin", signin, methods=["POST"]),
        Route("/login", login, methods=["POST"]), Route("/items", items), Route("/user/{n:int}", user),
        Route("/twice", twice), Route("/s1", s1), Route("/s2", s2), Route("/api", api), Route("/free", free),
        Route("/health", health), Mount("/r", routes=[Route("/x", in_router)]), Mount("/plain", plain_app),
        Mount("/late", late_router), Route("/late", add_late, methods=["POST"]),
    ])
    limiter.init_app(app)
else:
    raise SystemExit(f"RW_APP={KIND!r}")
