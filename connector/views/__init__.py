"""The connector's pages: the admin settings page (settings.py, with its blueprint, session and
sign-in) and the page modules that add their routes to it."""
