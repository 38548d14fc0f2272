"""POST /api/users/<user_id>/login, 5/minute per X-User, in Flask (a blueprint mounted at /api), on RW_STORE.
tests/polyglot/test_one_route.py serves it under gunicorn beside the same route in five other frameworks."""
import os

from flask import Blueprint, Flask

from ratewarden import keys
from ratewarden.flask import RateLimiter

app = Flask(__name__)
limiter = RateLimiter(store=os.environ["RW_STORE"])
api = Blueprint("api", __name__, url_prefix="/api")


@api.post("/users/<int:user_id>/login")
@limiter.limit("5/minute", key=keys.header("X-User"))
def login(user_id):
    return "welcome"


app.register_blueprint(api)
limiter.init_app(app)
