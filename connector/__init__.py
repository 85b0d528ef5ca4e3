"""The CRM connector: webhook receiver, mappings, adapters and write-back (to come)."""
