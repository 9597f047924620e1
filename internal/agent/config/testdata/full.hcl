# A production-like agent config using most blocks.
region     = "eu"
datacenter = "dc2"
name       = "node-a"
data_dir   = "/var/lib/drover"
log_level  = "WARN"
log_json   = true
bind_addr  = "10.0.0.5"
enable_debug = true
leave_on_terminate = true
disable_update_check = true
log_rotate_duration = "1h"

ports {
  http = 5646
  rpc  = 5647
  serf = 5648
}

advertise {
  http = "192.168.1.10"
  rpc  = "192.168.1.10:6647"
}

server {
  enabled          = true
  bootstrap_expect = 3
  heartbeat_grace  = "30s"
  min_heartbeat_ttl = "15s"
  max_heartbeats_per_second = 25.5
  num_schedulers   = 4
  gc_heap_floor_mb = 256
  enabled_schedulers = ["service", "batch"]
  job_gc_threshold = "2h"
  encrypt          = "pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s="
  server_join {
    retry_join     = ["10.0.0.6", "10.0.0.7"]
    retry_interval = "15s"
    retry_max      = 3
  }
  default_scheduler_config {
    scheduler_algorithm = "spread"
    preemption_config {
      batch_scheduler_enabled = true
    }
  }
}

client {
  enabled           = true
  servers           = ["10.0.0.6:4647"]
  node_class        = "compute"
  node_pool         = "gpu"
  network_interface = "eth0"
  max_kill_timeout  = "1m"
  detect_foreign_ports = true
  options = {
    "driver.raw_exec.enable" = "1"
    "fingerprint.denylist"   = "env_aws"
  }
  meta {
    rack = "r1"
  }
  reserved {
    cpu            = 500
    memory         = 512
    reserved_ports = "22,80,8000-8010"
  }
  host_volume "data" {
    path      = "/srv/data"
    read_only = true
  }
  host_volume "logs" {
    path = "/srv/logs"
  }
  host_network "public" {
    cidr = "203.0.113.0/24"
  }
}

plugin "fake_device" {
  config {
    vendor = "drover"
    attributes {
      memory = "8 GiB"
    }
  }
}

plugin "raw_exec" {
  config {
    enabled = true
  }
}

consul {
  address = "127.0.0.1:8500"
  server_auto_join = true
  client_auto_join = true
}

vault {
  enabled = false
  address = "https://vault:8200"
}

telemetry {
  prometheus_metrics = true
  collection_interval = "5s"
}

acl {
  enabled   = false
  token_ttl = "60s"
}

tls {
  http = false
  ca_file = "/etc/ca.pem"
}

ui {
  enabled = true
  consul {
    ui_url = "https://consul.example.com/ui"
  }
}

audit {
  enabled = true
  sink "file" {
    type   = "file"
    format = "json"
    path   = "/var/log/audit.log"
  }
}

limits {
  http_max_conns_per_client = 200
}
