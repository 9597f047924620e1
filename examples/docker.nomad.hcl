# A container job: two web servers, each on its own host port.
# Build the image first (offline, FROM scratch):  scripts/docker-example-image.sh
# Then, against a dev agent on a host with dockerd running:
#   go run ./cmd/drover job run examples/docker.nomad.hcl
job "web" {
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
      driver = "docker"

      config {
        image = "drover-hello:local"
        ports = ["http"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
