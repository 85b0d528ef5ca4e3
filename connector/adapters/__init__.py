"""What every CRM adapter shares (base.py); each adapter lives with its platform, in
connector/platforms/<platform>.py."""
