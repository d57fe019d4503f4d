// Internal to core/json: the allocator of the scratch stacks of one parse or write. RapidJSON's
// reader (pending strings and parse states), a document under construction (pending values) and
// a writer (open containers) each keep a stack they allocate on first use and free at the end:
// three to six heap allocations per parse (two of them a stateless allocator object the stack
// creates for itself), on every watch event, response and cached-object read. A ScratchStack
// object lives in the frame of the parse that uses it and serves its stack's first `InlineBytes`
// from inside itself; only a stack that grows past that goes to the heap. One ScratchStack per
// stack: it holds one block at a time.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

namespace unitrain::json::detail {

template <std::size_t InlineBytes>
class ScratchStack {
 public:
  // RapidJSON's Allocator concept: the stacks call Realloc (Malloc for completeness) and the
  // static Free, so every block starts with a header saying where it lives.
  static const bool kNeedFree = true;

  ScratchStack() { ::new (static_cast<void*>(inline_)) Header{false, false}; }
  ScratchStack(const ScratchStack&) = delete;
  ScratchStack& operator=(const ScratchStack&) = delete;

  void* Malloc(std::size_t size) { return Realloc(nullptr, 0, size); }

  void* Realloc(void* block, std::size_t old_size, std::size_t new_size) {
    if (new_size == 0) {
      Free(block);
      return nullptr;
    }
    if (block == nullptr) {
      Header* own = header_of(payload(inline_));
      if (new_size <= InlineBytes && !own->in_use) {
        own->in_use = true;
        return payload(inline_);
      }
      return heap_block(new_size);
    }
    Header* h = header_of(block);
    if (h->heap) {
      void* grown = std::realloc(h, sizeof(Header) + new_size);
      return grown ? payload(grown) : nullptr;
    }
    if (new_size <= InlineBytes) return block;
    void* moved = heap_block(new_size);
    if (moved == nullptr) return nullptr;
    std::memcpy(moved, block, old_size < new_size ? old_size : new_size);
    h->in_use = false;
    return moved;
  }

  static void Free(void* block) {
    if (block == nullptr) return;
    Header* h = header_of(block);
    if (h->heap) std::free(h);
    else h->in_use = false;
  }

 private:
  struct alignas(16) Header {
    bool heap;    // from malloc (else this object's buffer)
    bool in_use;  // the buffer is handed out (inline block only)
  };
  static void* payload(void* base) { return static_cast<unsigned char*>(base) + sizeof(Header); }
  static Header* header_of(void* block) {
    return std::launder(reinterpret_cast<Header*>(static_cast<unsigned char*>(block) - sizeof(Header)));
  }
  static void* heap_block(std::size_t size) {
    void* base = std::malloc(sizeof(Header) + size);
    if (base == nullptr) return nullptr;
    ::new (base) Header{true, true};
    return payload(base);
  }

  alignas(16) unsigned char inline_[sizeof(Header) + InlineBytes];
};

}  // namespace unitrain::json::detail
