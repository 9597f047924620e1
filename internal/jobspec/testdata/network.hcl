# network (group, and the legacy form inside task resources), port, dns, cni.
job "net" {
  group "bridge" {
    network {
      mode     = "bridge"
      hostname = "web-${NOMAD_ALLOC_INDEX}"
      port "http" {
        to = 8080
      }
      port "metrics" {
        static       = 9100
        to           = 9100
        host_network = "internal"
      }
      port "shared" {
        static           = 5353
        ignore_collision = true
      }
      dns {
        servers  = ["1.1.1.1", "8.8.8.8"]
        searches = ["svc.local"]
        options  = ["ndots:2"]
      }
    }
    task "t" {
      driver = "docker"
    }
  }

  group "cni" {
    network {
      mode = "cni/mynet"
      cni {
        args = {
          IgnoreUnknown = "true"
          LABEL         = "x"
        }
      }
    }
    network {
      mode   = "host"
      mbits  = 10
      device = "eth1"
      cidr   = "10.0.0.0/24"
      ip     = "10.0.0.5"
    }
    task "legacy" {
      driver = "exec"
      resources {
        network {
          mbits = 5
          port "db" {}
          port "fixed" {
            static = 6379
          }
        }
      }
    }
  }
}
