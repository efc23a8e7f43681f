"""Where a command runs and what it leaves: this machine or an OpenSSH host, placement, processes,
owner records, work folders."""
