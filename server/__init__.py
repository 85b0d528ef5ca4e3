"""The contact-data service: store, dataset, matching, enrich, discover and administration."""
