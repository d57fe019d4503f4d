// The per-job SSH identity of MPI jobs: an ECDSA P-521 key pair, as mpi-operator stores it in
// its `J-ssh` Secret and Kubeflow Trainer in `<trainjob>-mpi-ssh-auth` (private key PEM
// "EC PRIVATE KEY" in SEC1 form, public key as one OpenSSH authorized_keys line).
#pragma once

#include <string>
#include <string_view>

#include "core/base/result.h"

namespace unitrain::ssh {

struct SshKeyPair {
  std::string private_key_pem;  // "-----BEGIN EC PRIVATE KEY-----\n..."
  std::string authorized_key;   // "ecdsa-sha2-nistp521 <base64 wire blob>\n"
};

// Fresh key pair from OpenSSL's CSPRNG. Errors carry OpenSSL's reason.
Result<SshKeyPair> generate_ssh_key();

}  // namespace unitrain::ssh
