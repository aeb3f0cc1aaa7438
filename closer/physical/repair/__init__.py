"""Repair after routing and sign-off: rip-up and reroute (repair), same-net fill (cleanup),
antenna diodes (diodes)."""
