"""The service over HTTP: the app factory, its blueprints, the gate every request passes, error
rendering, the OpenAPI document and gunicorn. The only part of server/ that imports Flask."""
