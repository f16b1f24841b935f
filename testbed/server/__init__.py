"""HTTP servers over the run database: the dashboard (`testbed.server.dashboard`)."""
