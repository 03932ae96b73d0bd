"""The engine as the app sees it: background preparation and the Explorer facade."""
