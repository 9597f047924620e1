data_dir = "/var/lib/drover"

server {
  enabled          = true
  bootstrap_exepct = 3
}

client {
  enabled = true
  host_volume "x" {
    paht = "/srv"
  }
}
