# service, check, check_restart, connect (sidecar_service, proxy, upstreams,
# expose, sidecar_task, gateway), at group and task level.
job "svc" {
  group "api" {
    network {
      mode = "bridge"
      port "http" {
        to = 8080
      }
    }

    service {
      name                = "api"
      provider            = "consul"
      port                = "http"
      tags                = ["v1", "public"]
      canary_tags         = ["canary"]
      enable_tag_override = true
      address_mode        = "alloc"
      on_update           = "require_healthy"
      cluster             = "default"
      meta {
        version = "1"
      }
      canary_meta {
        canary = "yes"
      }
      tagged_addresses {
        lan = "10.0.0.1"
      }
      weights {
        passing = 3
        warning = 1
      }
      identity {
        aud = ["consul.io"]
        ttl = "1h"
      }

      check {
        name                     = "alive"
        type                     = "http"
        path                     = "/health"
        method                   = "POST"
        body                     = "{}"
        protocol                 = "https"
        interval                 = "10s"
        timeout                  = "2s"
        initial_status           = "passing"
        tls_skip_verify          = true
        tls_server_name          = "api.local"
        expose                   = true
        success_before_passing   = 2
        failures_before_critical = 3
        failures_before_warning  = 1
        on_update                = "ignore_warnings"
        notes                    = "main check"
        header {
          Authorization = ["Bearer x"]
          X-Multi       = ["a", "b"]
        }
        check_restart {
          limit           = 3
          grace           = "90s"
          ignore_warnings = true
        }
      }
      check {
        type         = "grpc"
        port         = "http"
        interval     = "5s"
        timeout      = "1s"
        grpc_service = "health"
        grpc_use_tls = true
        address_mode = "driver"
      }

      connect {
        sidecar_service {
          port = "20000"
          tags = ["mesh"]
          proxy {
            local_service_address = "127.0.0.1"
            local_service_port    = 8080
            upstreams {
              destination_name = "db"
              local_bind_port  = 5432
              datacenter       = "dc2"
              mesh_gateway {
                mode = "local"
              }
            }
            expose {
              path {
                path            = "/metrics"
                protocol        = "http"
                local_path_port = 9102
                listener_port   = "http"
              }
            }
            transparent_proxy {
              exclude_outbound_ports = [53]
              no_dns                 = true
            }
            config {
              protocol = "http"
            }
          }
        }
        sidecar_task {
          driver       = "docker"
          kill_timeout = "3s"
          config {
            image = "envoy:custom"
          }
          resources {
            cpu    = 50
            memory = 64
          }
        }
      }
    }

    task "app" {
      driver = "docker"
      service {
        name     = "app-native"
        provider = "nomad"
        port     = 8081
        task     = "app"
        address  = "192.168.1.1"
        check {
          type     = "tcp"
          interval = "15s"
          timeout  = "3s"
        }
        check_restart {
          limit = 2
        }
      }
      service {
        name = "script"
        check {
          type     = "script"
          command  = "/bin/check"
          args     = ["-v"]
          task     = "app"
          interval = "1m"
          timeout  = "5s"
        }
      }
    }
  }

  group "gw" {
    service {
      name = "ingress"
      connect {
        native = false
        gateway {
          proxy {
            connect_timeout = "5s"
          }
          ingress {
            listener {
              port     = 8080
              protocol = "tcp"
              service {
                name = "api"
              }
            }
          }
        }
      }
    }
    task "t" {
      driver = "exec"
    }
  }
}
