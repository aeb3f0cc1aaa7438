from closer.metered.client import entry

entry()
