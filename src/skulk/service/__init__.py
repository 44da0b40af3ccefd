"""Running a node as a service: systemd on Linux, launchd on macOS (`skulk service`)."""
