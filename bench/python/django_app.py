"""The Django project of adapters_bench.py in one module (settings, views, URLs), served by gunicorn: ``/``
(10^9 a minute per client address: every request allowed) and ``/denied`` (1 a day per address, used up when each
worker loads the app, so every measured request is refused).

BENCH_VARIANT = bare | floor (no limiter: the fields ratewarden sends, as constant text, and with a redis://
store one INCR per request through redis-py: what any limiter that sends those fields, and stores on Redis, pays at
least) | ratewarden (ratewarden.django: its middleware and @limit) | hand (the limiter a user would write by hand:
hand.py) | django-ratelimit (@ratelimit with block=True and a 429 view; its counts in Django's cache: LocMemCache
for memory://, RedisCache for Redis); BENCH_STORE = memory:// or a redis:// URL.
"""

import os

from django.core.wsgi import get_wsgi_application
from django.http import HttpResponse
from django.urls import path

VARIANT = os.environ.get("BENCH_VARIANT", "bare")
STORE = os.environ.get("BENCH_STORE", "memory://")

SECRET_KEY = "bench"
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "django_app"
INSTALLED_APPS: list = []
MIDDLEWARE: list = []
USE_TZ = True


def hello(request):
    return HttpResponse("hello\n", content_type="text/plain")


def denied(request):
    return HttpResponse("hello\n", content_type="text/plain")


if VARIANT == "floor":
    import redis

    ALLOWED_FIELDS = {"RateLimit-Policy": '"hello";q=1000000000;w=60', "RateLimit": '"hello";r=999999999;t=60'}
    DENIED_FIELDS = {"RateLimit-Policy": '"denied";q=1;w=86400', "RateLimit": '"denied";r=0;t=86400',
                     "Retry-After": "86400"}
    DENIED_BODY = "429 Too Many Requests: 1/day exceeded; retry in 86400 s\n"
    store = redis.Redis.from_url(STORE) if STORE != "memory://" else None

    def hello(request):
        if store is not None:
            store.incr(f"bench-floor:{request.META['REMOTE_ADDR']}")
        return HttpResponse("hello\n", content_type="text/plain", headers=ALLOWED_FIELDS)

    def denied(request):
        if store is not None:
            store.incr(f"bench-floor-denied:{request.META['REMOTE_ADDR']}")
        return HttpResponse(DENIED_BODY, status=429, content_type="text/plain; charset=utf-8", headers=DENIED_FIELDS)

elif VARIANT == "ratewarden":
    from ratewarden.django import limit

    MIDDLEWARE = ["ratewarden.django.RateLimitMiddleware"]
    RATEWARDEN = {"STORE": STORE, "PREFIX": "bench-django"}
    hello = limit("1000000000/minute")(hello)
    denied = limit("1/day")(denied)
elif VARIANT == "hand":
    from hand import hands

    HANDS = hands(STORE)

    def by_hand(request, hand):
        status, body, fields = hand.answer(hand.limiter.hit(request.META["REMOTE_ADDR"]))
        return HttpResponse(body, status=status, content_type="text/plain", headers=fields)

    def hello(request):
        return by_hand(request, HANDS[0])

    def denied(request):
        return by_hand(request, HANDS[1])

elif VARIANT == "django-ratelimit":
    from django_ratelimit.decorators import ratelimit

    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"} if STORE == "memory://" else
              {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": STORE}}
    RATELIMIT_VIEW = "django_app.too_many"
    RATELIMIT_HASH_ALGORITHM = "hashlib.sha256"
    MIDDLEWARE = ["django_ratelimit.middleware.RatelimitMiddleware"]
    SILENCED_SYSTEM_CHECKS = ["django_ratelimit.E003", "django_ratelimit.W001"]

    def too_many(request, exception):
        return HttpResponse("429 Too Many Requests\n", status=429, content_type="text/plain")

    hello = ratelimit(key="ip", rate="1000000000/m", block=True)(hello)
    denied = ratelimit(key="ip", rate="1/d", block=True)(denied)
elif VARIANT != "bare":
    raise SystemExit(f"unknown BENCH_VARIANT {VARIANT!r}")

urlpatterns = [path("", hello), path("denied", denied)]

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_app")
application = get_wsgi_application()

if VARIANT not in ("bare", "floor"):
    # wrk connects from 127.0.0.1: use up that key's one request a day on /denied, in this worker.
    from django.test import Client

    Client(REMOTE_ADDR="127.0.0.1").get("/denied")
