"""A Django project as `django-admin startproject` makes it (the default apps and middleware: sessions,
CSRF, auth, messages, clickjacking; DEBUG off), with one view module routed through its URLconf. Served by
`csgi serve --wsgi django_project:application` and by gunicorn in tests/bindings/test_django_project.py,
and by bench/suites/python_apps.sh.

Views: / (a page), /stream (a StreamingHttpResponse), /upload (a CSRF-exempt POST that reads the whole
body); anything else is Django's 404 through the router.
"""
import hashlib
import os
import tempfile

import django
from django.conf import settings

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="csgi-tests-not-secret",
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=[
            "django.contrib.admin",
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "django.contrib.sessions",
            "django.contrib.messages",
            "django.contrib.staticfiles",
        ],
        MIDDLEWARE=[
            "django.middleware.security.SecurityMiddleware",
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.middleware.common.CommonMiddleware",
            "django.middleware.csrf.CsrfViewMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
            "django.contrib.messages.middleware.MessageMiddleware",
            "django.middleware.clickjacking.XFrameOptionsMiddleware",
        ],
        TEMPLATES=[{
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "DIRS": [],
            "APP_DIRS": True,
            "OPTIONS": {"context_processors": [
                "django.template.context_processors.debug",
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]},
        }],
        # Never opened: no view touches the session, the user or a model.
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3",
                               "NAME": os.path.join(tempfile.gettempdir(), "csgi-django-project.sqlite3")}},
        USE_TZ=True,
        STATIC_URL="/static/",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        LOGGING_CONFIG=None,
    )
    django.setup()

from django.http import HttpResponse, StreamingHttpResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402
from django.views.decorators.http import require_POST  # noqa: E402


def index(request):
    return HttpResponse("Hello, World!", content_type="text/plain")


def stream(request):
    return StreamingHttpResponse((b"%04d %s\n" % (i, b"x" * 58) for i in range(16)), content_type="text/plain")


@csrf_exempt
@require_POST
def upload(request):
    body = request.body
    return HttpResponse(b"%d %s" % (len(body), hashlib.sha256(body).hexdigest().encode()), content_type="text/plain")


urlpatterns = [
    path("", index),
    path("stream", stream),
    path("upload", upload),
]

from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()
