"""The Django project of tests/python/test_adapters.py in one module (settings, views, URLs), served by gunicorn
(DJANGO_SETTINGS_MODULE=django_app), or by uvicorn as an ASGI application (``asgi_application``). RW_TEST_STORE, RW_TEST_PREFIX, RW_TEST_OPTIONS (JSON: more options, in
settings.RATEWARDEN's upper-case form). The routes are asgi_app.py's."""

import json
import os
import time

from asgiref.sync import iscoroutinefunction
from django.core.asgi import get_asgi_application
from django.core.wsgi import get_wsgi_application
from django.http import HttpResponse
from django.urls import path
from django.utils.decorators import method_decorator, sync_and_async_middleware
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from ratewarden import KeyList, keys
from ratewarden.django import exempt, limit, shared_limit

SECRET_KEY = "test"
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "django_app"
MIDDLEWARE = ["django_app.header_user", "ratewarden.django.RateLimitMiddleware"]
INSTALLED_APPS: list = []
RATEWARDEN = {"STORE": os.environ["RW_TEST_STORE"], "PREFIX": os.environ["RW_TEST_PREFIX"],
              **{k.upper(): v for k, v in json.loads(os.environ.get("RW_TEST_OPTIONS", "{}")).items()}}
if os.environ.get("RW_CUSTOM_REFUSAL"):  # the refusal option as a function, by its dotted path
    RATEWARDEN["REFUSAL"] = "django_app.custom_refusal"
for _list in ("ALLOW_LIST", "DENY_LIST"):  # given by name: the KeyList of that name on the store
    if _list in RATEWARDEN:
        RATEWARDEN[_list] = KeyList(RATEWARDEN[_list], RATEWARDEN["STORE"])


def custom_refusal(request, refusal):
    from django.http import JsonResponse

    return JsonResponse({"policy": refusal.name, "wait": refusal.retry_after}, status=429)


if os.environ.get("RW_NO_MIDDLEWARE"):  # @limit alone
    MIDDLEWARE = ["django_app.header_user"]


class _User:
    def __init__(self, pk):
        self.pk = pk
        self.is_authenticated = pk is not None


@sync_and_async_middleware
def header_user(get_response):  # authentication as a test needs it: X-User names the user
    if iscoroutinefunction(get_response):  # under ASGI: no thread between the server and the limiter
        async def amiddleware(request):
            request.user = _User(request.headers.get("X-User"))
            return await get_response(request)

        return amiddleware

    def middleware(request):
        request.user = _User(request.headers.get("X-User"))
        return get_response(request)

    return middleware


@limit("5/minute", key=keys.form("username"))
def login(request):
    return HttpResponse("welcome", content_type="text/plain")


@limit("3/minute")
def items(request):
    return HttpResponse("items", content_type="text/plain")


@limit("2/minute", key=lambda request: int(request.resolver_match.kwargs["n"]))
def user(request, n):
    return HttpResponse(f"user {n}", content_type="text/plain")


@limit("2/minute")
@limit("2/minute")
def twice(request):
    return HttpResponse("twice", content_type="text/plain")


@shared_limit("3/minute", "search")
def s1(request):
    return HttpResponse("s1", content_type="text/plain")


@shared_limit("3/minute", "search")
def s2(request):
    return HttpResponse("s2", content_type="text/plain")


@limit("100000/minute", key=keys.header("X-API-Key"))
def api(request):
    return HttpResponse("api", content_type="text/plain")


def free(request):
    return HttpResponse("free", content_type="text/plain")


@exempt
def health(request):
    return HttpResponse("ok", content_type="text/plain")


@csrf_exempt
@limit("3/minute", key=keys.form("username"), count_when=lambda status: status >= 400)
def signin(request):
    if request.headers.get("X-Slow"):  # the answer takes 0.6 s (a test stops the store meanwhile)
        time.sleep(0.6)
    ok = request.POST.get("password") == "right"
    return HttpResponse("welcome", content_type="text/plain", status=200 if ok else 401)


@limit("2/minute", key=keys.first(keys.user(), keys.address()))
def me(request):
    return HttpResponse("me", content_type="text/plain")


@limit("1/minute", key=keys.combine(keys.header("X-A"), keys.address()))
def pair(request):
    return HttpResponse("pair", content_type="text/plain")


@limit("3/minute")
async def aitems(request):  # an async view: under ASGI, its limit is decided on the event loop
    return HttpResponse("items", content_type="text/plain")


@method_decorator(limit("3/minute"), name="dispatch")  # a class-based view, limited as docs/python.md says
class Report(View):
    def get(self, request):
        return HttpResponse("report", content_type="text/plain")


urlpatterns = [
    path("report", Report.as_view()),
    path("login", login), path("items", items), path("user/<int:n>", user), path("twice", twice), path("s1", s1),
    path("s2", s2), path("api", api), path("free", free), path("health", health), path("me", me), path("pair", pair),
    path("signin", signin), path("aitems", aitems),
]

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_app")
application = get_wsgi_application()
asgi_application = get_asgi_application()  # the same project under uvicorn (django-asgi in the tests)
