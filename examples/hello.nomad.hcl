# A first job: one batch task that greets and exits, run by raw_exec.
# Submit it to a dev agent with:  go run ./cmd/drover job run examples/hello.nomad.hcl
job "hello" {
  datacenters = ["*"]
  type        = "batch"

  group "greet" {
    count = 1

    task "say" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"hello from ${NOMAD_ALLOC_NAME} on $(hostname)\""]
      }

      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
