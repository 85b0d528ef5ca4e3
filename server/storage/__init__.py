"""The database, in layers, each importing only those below it (tests/test_import_graph.py):
pg, the PostgreSQL facade; dialect, where the two backends' SQL differs; schema, the migration
runner; migrations, the service's steps; store, every statement (and the rebuilds migrations
ask for); db, connections, write transactions and migrating; move, SQLite into PostgreSQL."""
