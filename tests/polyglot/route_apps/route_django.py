"""POST api/users/<int:user_id>/login, 5/minute per X-User, in Django (an include() at api/), on RW_STORE: settings,
view and URLs in one module (DJANGO_SETTINGS_MODULE=route_django). Served by gunicorn in
tests/polyglot/test_one_route.py."""
import os

from django.core.wsgi import get_wsgi_application
from django.http import HttpResponse
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt

from ratewarden import keys
from ratewarden.django import limit

SECRET_KEY = "test"
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "route_django"
MIDDLEWARE = ["ratewarden.django.RateLimitMiddleware"]
INSTALLED_APPS: list = []
RATEWARDEN = {"STORE": os.environ["RW_STORE"]}


@csrf_exempt
@limit("5/minute", key=keys.header("X-User"))
def login(request, user_id):
    return HttpResponse("welcome")


urlpatterns = [path("api/", include([path("users/<int:user_id>/login", login)]))]

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "route_django")
application = get_wsgi_application()
