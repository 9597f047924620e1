# A container job: two web servers, each on its own host port.
# Build the image first (offline, FROM scratch):  scripts/podman-example-image.sh
# Then, against a dev agent on a host with podman's API service running
# (`podman system service --time=0 unix:///run/podman/podman.sock`, see the README):
#   go run ./cmd/drover job run examples/podman.nomad.hcl
job "pweb" {
  datacenters = ["*"]

  group "web" {
    count = 2

    network {
      # A host port picked by the scheduler, published to the container's 8080.
      port "http" {
        to = 8080
      }
    }

    task "server" {
      driver = "podman"

      config {
        image = "localhost/drover-hello:local"
        ports = ["http"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
