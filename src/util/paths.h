// Files by path: the whole text of a small file, and the rule that model folders, which come from the
// internet, keep every file a model names inside the folder, even through symbolic links (a link in a
// downloaded folder could point at ~/.ssh/id_rsa).
#pragma once

#include <string>

namespace onnxstream {

// The path to open for `name` (a relative name already checked to have no "..", no absolute part) inside
// `folder`. A symbolic link anywhere on the way is followed only when the file it reaches is inside the
// folder; otherwise throws Error(IO) naming `what`, the link and where it leads. A name that does not
// exist is returned joined (the caller reports "not found" in its own words).
std::string path_inside_folder(const std::string &folder, const std::string &name, const std::string &what);

// The bytes of the file at `path` (meant for text files of a few MB). Throws Error(IO) "cannot read PATH:
// reason".
std::string read_text_file(const std::string &path);

} // namespace onnxstream
