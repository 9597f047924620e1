job "rt" {
  constraint {
    attribute = "${meta.rack}"
    operator  = "="
    value     = "r1"
  }

  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo ${NOMAD_ALLOC_INDEX} on ${node.unique.id}"]
      }
      env {
        KERNEL = "${attr.kernel.name}"
        HOME2  = "${env["HOME"]}"
        GPU    = "${device.model}"
        MIXED  = "node-${node.datacenter}-${upper("x")}"
      }
      template {
        data        = "addr={{ env \"NOMAD_ADDR_http\" }}"
        destination = "local/out.txt"
      }
    }
  }
}
