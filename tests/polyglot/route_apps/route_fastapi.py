"""POST /api/users/{user_id}/login, 5/minute per X-User, in FastAPI (an APIRouter included at /api, in an app made by
a factory), on RW_STORE. Served by uvicorn (--factory) in tests/polyglot/test_one_route.py."""
import os

from fastapi import APIRouter, FastAPI
from fastapi.responses import PlainTextResponse

from ratewarden import keys
from ratewarden.asgi import RateLimiter


def make_app() -> FastAPI:
    limiter = RateLimiter(store=os.environ["RW_STORE"])
    users = APIRouter(prefix="/users")

    @users.post("/{user_id}/login", response_class=PlainTextResponse)
    @limiter.limit("5/minute", key=keys.header("X-User"))
    def login(user_id: int) -> str:
        return "welcome"

    app = FastAPI()
    app.include_router(users, prefix="/api")
    limiter.init_app(app)
    return app
