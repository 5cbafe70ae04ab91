FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app

COPY requirements.txt requirements-nodeps.txt ./
RUN pip install --no-cache-dir -r requirements.txt && pip install --no-cache-dir --no-deps -r requirements-nodeps.txt

COPY . .
# collectstatic imports the settings, which refuse to start without production values:
# a throwaway key is given for this build step only.
RUN DEBUG=false ALLOWED_HOSTS=build SECRET_KEY=build-only-$(python -c 'import secrets; print(secrets.token_urlsafe(50))') \
    STATIC_ROOT=/app/staticfiles python manage.py collectstatic --no-input -v 0

RUN useradd --create-home equityrate
USER equityrate
ENV STATIC_ROOT=/app/staticfiles
EXPOSE 8000
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
