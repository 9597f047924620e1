job "web" {
  datacenters = ["dc1", "dc2"]
  type        = "service"
  priority    = 70

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  update {
    max_parallel     = 2
    min_healthy_time = "15s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  meta {
    owner = "platform"
  }

  group "frontend" {
    count = 3

    network {
      port "http" {
        to = 8080
      }
      port "admin" {
        static = 9000
      }
    }

    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    task "server" {
      driver = "docker"

      config {
        image   = "nginx:1.25"
        ports   = ["http", "admin"]
        args    = ["-g", "daemon off;"]
        mount {
          type   = "bind"
          source = "local"
          target = "/etc/nginx/conf.d"
        }
      }

      env {
        PORT = "8080"
        MODE = "production"
      }

      resources {
        cpu    = 500
        memory = 256
      }

      kill_timeout = "20s"
    }
  }
}
