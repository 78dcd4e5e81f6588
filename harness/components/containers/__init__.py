"""Container machinery of the compose backend: the Docker Engine, Compose v2, the images."""
