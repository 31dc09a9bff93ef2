"""The runtime every primitive stands on: data types, devices, streams and launch-buffer checks."""
