"""A tiny Django project in one module (settings in code, DEBUG off) for the serving tests:
`csgi serve --wsgi django_site:application` and the same module under gunicorn (differential test).

Views: GET pages with query strings, a POST form, a multipart upload, a unicode path, JSON, a redirect
(APPEND_SLASH), a 404, a 500 (an exception with DEBUG off), a streamed response and a FileResponse (which
goes through wsgi.file_wrapper), a cookie, HEAD.
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
        MIDDLEWARE=[
            "django.middleware.security.SecurityMiddleware",
            "django.middleware.common.CommonMiddleware",
            "django.middleware.clickjacking.XFrameOptionsMiddleware",
        ],
        INSTALLED_APPS=[],
        DATABASES={},
        USE_TZ=True,
        APPEND_SLASH=True,
        DATA_UPLOAD_MAX_MEMORY_SIZE=2 * 1024 * 1024,
        FILE_UPLOAD_MAX_MEMORY_SIZE=64 * 1024,  # bigger uploads go through a temp file
        FILE_UPLOAD_TEMP_DIR=tempfile.gettempdir(),
        LOGGING_CONFIG=None,  # the 500's traceback is the server's to log, not Django's console handler
        DEFAULT_CHARSET="utf-8",
    )
    django.setup()

from django.http import (FileResponse, Http404, HttpResponse, HttpResponseRedirect, JsonResponse,  # noqa: E402
                         StreamingHttpResponse)
from django.urls import path, re_path  # noqa: E402
from django.views.decorators.http import require_POST  # noqa: E402

FILE_DATA = bytes((i * 31 + 7) & 0xFF for i in range(200000))
_file_dir = tempfile.mkdtemp(prefix="csgi-django-")
FILE_PATH = os.path.join(_file_dir, "data.bin")
with open(FILE_PATH, "wb") as _f:
    _f.write(FILE_DATA)


def index(request):
    return HttpResponse("<h1>csgi django</h1><p>%s %s</p>" % (request.method, request.get_full_path()),
                        content_type="text/html; charset=utf-8")


def query(request):
    return JsonResponse({"args": {k: request.GET.getlist(k) for k in sorted(request.GET)},
                         "path": request.path, "script": request.META.get("SCRIPT_NAME", "")})


@require_POST
def form(request):
    return JsonResponse({"form": {k: request.POST.getlist(k) for k in sorted(request.POST)},
                         "ctype": request.content_type})


@require_POST
def upload(request):
    files = {}
    for name in sorted(request.FILES):
        f = request.FILES[name]
        data = f.read()
        files[name] = {"filename": f.name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                       "content_type": f.content_type}
    return JsonResponse({"files": files, "fields": {k: request.POST.getlist(k) for k in sorted(request.POST)}})


def unicode_page(request, name):
    return HttpResponse("name=%s path=%s" % (name, request.path), content_type="text/plain; charset=utf-8")


def raw_body(request):
    body = request.body
    return HttpResponse(b"len=%d sha=%s" % (len(body), hashlib.sha256(body).hexdigest().encode()),
                        content_type="text/plain")


def missing(request):
    raise Http404("no such thing")


def boom(request):
    raise RuntimeError("django boom")


def stream(request):
    return StreamingHttpResponse((("line %d\n" % i).encode() for i in range(20)), content_type="text/plain")


def download(request):
    return FileResponse(open(FILE_PATH, "rb"), content_type="application/octet-stream")


def cookie(request):
    r = HttpResponse("seen=%s" % request.COOKIES.get("visit", "none"), content_type="text/plain")
    r.set_cookie("visit", "yes", max_age=60, path="/", httponly=True, samesite="Lax")
    return r


def redirect(request):
    return HttpResponseRedirect("/query?from=redirect")


def status(request, code):
    return HttpResponse("status %d" % code, status=code, content_type="text/plain")


urlpatterns = [
    path("", index),
    path("query", query),
    path("form", form),
    path("upload", upload),
    path("raw", raw_body),
    path("caf\u00e9/<str:name>", unicode_page),
    path("missing", missing),
    path("boom", boom),
    path("stream", stream),
    path("download", download),
    path("cookie", cookie),
    path("redirect", redirect),
    path("status/<int:code>", status),
    re_path(r"^slash/$", index),
]

from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()
